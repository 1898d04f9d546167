// Package bundle models a Harbor task bundle and moves it safely between its
// three shapes: a task directory on disk, a deterministic gzip-compressed tar
// (the `task_binary` column of the reference dataset), and an in-memory view
// used for validation.
//
//   - Encode, EncodeDir and DirEntries pack a task directory into the tar,
//     deterministically (sorted members, fixed owners and times), as the
//     reference packer lays it out; Extract writes one back into a fresh
//     directory and never outside it.
//   - Walk is the decoder: streaming and defensive, it refuses absolute and
//     `..` member names, links that leave the tree, device files and FIFOs,
//     and enforces Limits on total inflated bytes, member count and
//     single-file size while inflating, so a gzip bomb costs neither memory
//     nor disk. It reads tar with a small strict reader of its own, and
//     inflates task-sized blobs in one call with libdeflate when the build
//     links it (cgo; the purego tag or CGO_ENABLED=0 builds without it).
//   - Scan decodes a blob into a Bundle (every member's metadata, content
//     hashes, and the contents of the small files within RetainLimits);
//     Validate checks that a Bundle is a usable single-step Harbor task
//     (instruction, task.toml, environment, verifier) and returns its Info;
//     ParseConfig parses task.toml leniently across schema versions 1.0-1.4,
//     recording every default it applies.
//
// Every rejection is a *Defect carrying a machine-readable reason code.
package bundle

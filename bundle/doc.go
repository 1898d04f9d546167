// Package bundle models a Harbor task bundle and moves it safely between its
// three shapes: a task directory on disk, a deterministic gzip-compressed tar
// (the `task_binary` column of the reference dataset), and an in-memory view
// used for validation.
//
// The decoder is streaming and defensive: it refuses absolute and `..`
// member names, links that leave the tree, device files and FIFOs, and it
// enforces limits on total inflated bytes, member count and single-file size
// while inflating, so a gzip bomb costs neither memory nor disk. Every
// rejection is a *Defect carrying a machine-readable reason code.
package bundle

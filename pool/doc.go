// Package pool reads task pools and writes datasets in the reference
// format: a parquet file (or HF-style shards) with exactly two columns,
// `path` (string) and `task_binary` (gzip tar of the task directory).
//
// Reading: Open detects the kind of pool a spec names (a parquet file, a
// glob of them, a directory of parquet shards, or a folder of task
// directories) and returns a re-readable Source of Records, which are not
// trusted yet (PathProblem checks a path value). Readers stream: a parquet
// pool is read page by page, touching only the two columns, so memory does
// not grow with the pool or its row groups, and a ParquetSource can lend its
// blobs instead of copying them (Lender). A folder of task directories (a
// task is a directory holding instruction.md or task.toml) is packed on the
// fly with the bundle encoder.
//
// Writing: Writer writes one file atomically (NAME.tmp, fsync, rename) with
// HF-safe row groups and early writeback; ShardedWriter spreads a known
// number of rows over HF-named shards. Pack and Unpack are the `otcurate
// pack` and `unpack` commands: task directories into a dataset, and a
// dataset back into DIR/<path>, skipping and reporting unusable rows and
// never writing outside DIR.
package pool

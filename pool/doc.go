// Package pool reads task pools and writes datasets in the reference
// format: a parquet file (or HF-style shards) with exactly two columns,
// `path` (string) and `task_binary` (gzip tar of the task directory).
//
// Readers stream: a parquet pool is read page by page, touching only the
// two columns, so memory does not grow with the pool or its row groups. A
// folder of task directories (a task is a directory holding instruction.md)
// is packed on the fly with the bundle encoder.
package pool

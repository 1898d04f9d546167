// Package filters holds otcurate's curation stages, one per file, the
// stage table (stages.go: each stage's name, kind, needs, run-directory
// format, help and constructor, read by the CLI, the registry and the
// docs' tests) and the registry that turns stage names into pipeline
// stages.
package filters

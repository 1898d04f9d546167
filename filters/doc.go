// Package filters holds otcurate's curation stages, one per file, and the
// registry that turns stage names into pipeline stages.
package filters

// Package pipeline is otcurate's stage engine. Tasks stream from a pool
// through an ordered list of stages with bounded concurrency and bounded
// memory; every decision is written to the run's decisions.jsonl as soon as
// it is made, in pool order.
//
// Two kinds of stage exist. An ItemStage decides each task on its own
// and runs streaming. A SetStage decides over all surviving tasks at once
// and sees only the small per-task metadata, never blobs. Consecutive item
// stages form a segment that reads the pool once; set stages sit between
// segments. The first stage is an Intake, which turns pool rows into
// tasks. The engine names no stage: which stages exist and what they are
// is the business of package filters (its stage table); the files of the
// run directory are package rundir's.
//
// The engine keeps one small Task record per input task (no blob, no
// parsed config), so peak memory is about workers × largest bundle plus
// that table, whatever the pool size.
package pipeline

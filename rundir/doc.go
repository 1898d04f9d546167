// Package rundir is the run-directory format of otcurate: decisions.jsonl
// (one line per task and stage, written as decided and read back in
// order), summary.json (the funnel), tasks.parquet (the per-task
// manifest), ledger.jsonl (the outcomes of expensive stages, for resuming)
// and the combination of sharded runs' directories. It knows the files,
// not the stages: what a stage writes beyond its verdict comes from the
// Layout its caller hands it.
package rundir

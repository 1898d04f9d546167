// Package reports turns run results into what people read:
//
//   - Inspect, the description `otcurate inspect` prints of a dataset file
//     (parquet layout, blob sizes, and the validity of every row through the
//     validate and dedup stages, in memory);
//   - WriteSummary, the end-of-run text funnel (per stage: in, kept,
//     dropped with top reasons, errors);
//   - the HTML report of a build or filter run (RUN_DIR/report.html):
//     LoadBuildReport and Render, WriteBuildReport, and StartBuildReport,
//     which reads the decisions while the run finishes writing. It is
//     computed from summary.json, decisions.jsonl and the manifest
//     (tasks.parquet) only, so every number can be traced to lines of
//     those files;
//   - WriteTrainReport, the HTML report of a train run, drawn from its
//     metrics.jsonl and eval.jsonl.
package reports

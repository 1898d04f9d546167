package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/reports"
	"github.com/otcurate/otcurate/rundir"
)

func newReportCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "report RUN_DIR",
		GroupID: "curate",
		Short:   "Regenerate RUN_DIR/report.html from a build, filter or train run",
		Long: `report rewrites RUN_DIR/report.html, a self-contained page (no scripts, no network)
computed only from the run's files: for build and filter runs (summary.json,
decisions.jsonl, tasks.parquet) the funnel, drops by reason, duration histograms,
unique environments, the verifier gate's proof split (printed here in one line too) and one
example per reason with its log excerpt; for train runs
(metrics.jsonl, eval.jsonl) the learning curves.`,
		Example: `  otcurate report out/demo/run`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			var err error
			switch {
			case exists(filepath.Join(dir, rundir.SummaryFile)):
				if err = reports.WriteBuildReport(dir); err == nil {
					if sum, serr := rundir.ReadSummary(dir); serr == nil {
						if line := reports.ProofLine(sum); line != "" {
							fmt.Fprintln(cmd.OutOrStdout(), line)
						}
					}
				}
			case exists(filepath.Join(dir, "metrics.jsonl")):
				err = reports.WriteTrainReport(dir)
			default:
				return usageErr(fmt.Errorf("%s holds neither %s (build, filter) nor metrics.jsonl (train)", dir, rundir.SummaryFile))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", filepath.Join(dir, reports.ReportFile))
			return nil
		},
	}
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return !errors.Is(err, os.ErrNotExist)
}

package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/reports"
)

func newInspectCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "inspect FILE",
		GroupID: "data",
		Short:   "Describe a dataset: schema, layout, sizes and validity",
		Example: `  otcurate inspect testdata/sample-pool.parquet
  otcurate inspect data/ --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ins, err := reports.Inspect(cmd.Context(), args[0], g.limits(), g.workers)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(ins)
			}
			printInspection(cmd.OutOrStdout(), ins)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printInspection(w io.Writer, ins *reports.Inspection) {
	fmt.Fprintf(w, "pool        %s (%d files, %d bytes)\n", ins.Pool, len(ins.Files), ins.FileBytes)
	if ins.CreatedBy != "" {
		fmt.Fprintf(w, "created by  %s\n", ins.CreatedBy)
	}
	fmt.Fprintf(w, "rows        %d in %d row groups (largest %d rows)\n", ins.Rows, ins.RowGroups, ins.MaxRowsPerGroup)
	for _, c := range ins.Columns {
		opt := "required"
		if c.Optional {
			opt = "optional"
		}
		fmt.Fprintf(w, "column      %-12s %-28s %s %s %s\n", c.Name, c.Type, opt, c.Encoding, c.Codec)
	}
	b := ins.BlobBytes
	fmt.Fprintf(w, "blob bytes  min %d  median %d  p90 %d  max %d  total %d\n", b.Min, b.Median, b.P90, b.Max, b.Total)
	fmt.Fprintf(w, "valid       %d of %d; duplicates %d; unique environments %d\n", ins.Valid, ins.Rows, ins.Duplicates, ins.UniqueEnvironments)
	for _, r := range pipeline.SortedReasons(ins.InvalidByReason) {
		fmt.Fprintf(w, "  %-28s %6d  e.g. %s\n", r, ins.InvalidByReason[r], ins.Examples[r])
	}
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/pool"
)

func newPackCmd(g *globals) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:     "pack DIR... -o FILE",
		GroupID: "data",
		Short:   "Pack task directories into a dataset parquet",
		Long: `pack writes each task found under the given directories (a task is a directory
holding instruction.md or task.toml; nothing inside a task is searched) as one row: path
relative to the given directory, task_binary a deterministic gzip tar of the task (the
same task always packs to the same bytes).`,
		Example: `  otcurate pack tasks/ -o tasks.parquet`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := pool.Pack(cmd.Context(), args, out)
			if err != nil {
				return err
			}
			for _, p := range res.Problems {
				fmt.Fprintf(cmd.OutOrStdout(), "skipped\t%s\t%s\t%s\n", p.Path, p.Reason, p.Detail)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "packed %d tasks into %s\n", res.Written, out)
			if len(res.Problems) > 0 {
				return &exitError{code: exitItemFailure, err: fmt.Errorf("%d tasks could not be packed", len(res.Problems))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output parquet file")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

func newUnpackCmd(g *globals) *cobra.Command {
	var dest string
	var overwrite bool
	cmd := &cobra.Command{
		Use:     "unpack FILE -d DIR",
		GroupID: "data",
		Short:   "Extract every task of a dataset into DIR/<path>, safely",
		Long: `unpack extracts each row into DIR/<path>. Unsafe, duplicate and nested paths (a row
inside an earlier row's path), links leaving the tree (resolved through the task's other
links), devices and bombs are refused per row. No symlink is ever followed below DIR, so
nothing is written or removed outside it: a path through a link already in DIR is refused.
Existing task directories are kept unless --overwrite (which replaces a link at a task's
path as a link).`,
		Example: `  otcurate unpack tasks.parquet -d tasks/`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := pool.Open(args[0])
			if err != nil {
				return err
			}
			res, err := pool.Unpack(cmd.Context(), src, dest, pool.UnpackOptions{Overwrite: overwrite, Limits: g.limits()})
			if err != nil {
				return err
			}
			for _, p := range res.Problems {
				fmt.Fprintf(cmd.OutOrStdout(), "skipped\t%s\t%s\t%s\n", p.Path, p.Reason, p.Detail)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "unpacked %d tasks into %s\n", res.Written, dest)
			if len(res.Problems) > 0 {
				return &exitError{code: exitItemFailure, err: fmt.Errorf("%d rows were not unpacked", len(res.Problems))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dest, "dir", "d", "", "destination directory")
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "replace task directories that already exist")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

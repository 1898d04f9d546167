package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/poolgen"
)

func newGenPoolCmd(g *globals) *cobra.Command {
	var (
		opts  poolgen.Options
		out   poolgen.Output
		rates string
		// nl2bash splits (scripts/proof-of-learning.sh)
		paraphrases string
	)
	cmd := &cobra.Command{
		Use:     "gen-pool -n N -o FILE",
		GroupID: "data",
		Short:   "Generate a realistic task pool with labelled injected defects",
		Long: `gen-pool writes N tasks of two families, as the reference sources look: pymethods2test-like
Python katas (expected test values computed by running the reference implementation with
python3) and nl2bash-like shell tasks. Defects are injected at the given rates and labelled
in a sidecar labels.jsonl: the ground truth for measuring otcurate's filters.

--rates is "default" (about 25% defective), "none", or a list like
"flaky_verifier=0.1,duplicate=0.05" (kinds: ` + strings.Join(poolgen.DefectKinds(), ", ") + `).`,
		Example: `  otcurate gen-pool -n 5000 --seed 1 -o pool.parquet
  otcurate gen-pool -n 50 --seed 3 --dir tasks/ --rates none`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := parseRates(rates)
			if err != nil {
				return usageErr(err)
			}
			opts.Rates = r
			if paraphrases != "" {
				if opts.Shell.Paraphrases, err = poolgen.ReadParaphrases(paraphrases); err != nil {
					return usageErr(err)
				}
			}
			if err := opts.Shell.Validate(); err != nil {
				return usageErr(err)
			}
			st, err := poolgen.WritePool(cmd.Context(), opts, out)
			if err != nil {
				return err
			}
			where := out.Parquet
			if where == "" {
				where = out.Dir
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d tasks to %s, labels to %s\n", st.Tasks, where, st.Labels)
			if st.Skipped > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "skipped %d blob-level defects (a task directory cannot hold them; use -o FILE.parquet)\n", st.Skipped)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVarP(&opts.N, "tasks", "n", 100, "number of tasks")
	f.Int64Var(&opts.Seed, "seed", 1, "seed (the pool is a pure function of the options)")
	f.Float64Var(&opts.KataShare, "kata-share", 0.7, "share of Python katas (the rest are shell tasks)")
	f.BoolVar(&opts.Balanced, "balanced", false, "draw template variants in shuffled rounds (each once per round) so a small pool covers them evenly")
	f.StringVar(&opts.Python, "python", "python3", "python3 used to compute expected values")
	f.StringVar(&opts.PathPrefix, "prefix", "task", "task path prefix")
	f.StringVar(&rates, "rates", "default", `defect rates: "default", "none" or "kind=p,..."`)
	f.StringVarP(&out.Parquet, "output", "o", "", "write a parquet dataset")
	f.StringVar(&out.Dir, "dir", "", "write task directories instead")
	f.StringVar(&out.Labels, "labels", "", "labels file (default: OUTPUT.labels.jsonl)")
	f.StringSliceVar(&opts.Shell.Variants, "variants", nil, "nl2bash: draw only these template or variant ids (count_lines, count_lines/v2, ...)")
	f.StringSliceVar(&opts.Shell.ExcludeVariants, "exclude-variants", nil, "nl2bash: never draw these template or variant ids")
	f.IntSliceVar(&opts.Shell.Phrasings, "phrasings", nil, "nl2bash: use only these instruction phrasings, 1-based (each variant has 2): hold a phrasing out of a split")
	f.StringVar(&paraphrases, "paraphrases", "", "nl2bash: JSON-lines file of {variant, text} instructions that replace the generator's phrasings (task i uses line i mod n)")
	cmd.MarkFlagsOneRequired("output", "dir")
	cmd.MarkFlagsMutuallyExclusive("output", "dir")
	return cmd
}

func parseRates(s string) (poolgen.Rates, error) {
	switch s {
	case "default":
		return poolgen.DefaultRates(), nil
	case "none":
		return poolgen.NoDefects(), nil
	}
	known := map[string]bool{}
	for _, k := range poolgen.DefectKinds() {
		known[k] = true
	}
	r := poolgen.Rates{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("--rates: %q is not kind=probability", part)
		}
		if !known[k] {
			return nil, fmt.Errorf("--rates: unknown defect kind %q", k)
		}
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || p < 0 || p > 1 {
			return nil, fmt.Errorf("--rates: %s must be a probability in [0,1]", k)
		}
		r[k] = p
	}
	return r, nil
}

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
		opts     poolgen.Options
		out      poolgen.Output
		rates    string
		pymRates string
		// nl2bash splits (scripts/proof-of-learning.sh)
		paraphrases string
	)
	cmd := &cobra.Command{
		Use:     "gen-pool -n N -o FILE",
		GroupID: "data",
		Short:   "Generate a realistic task pool with labelled injected defects",
		Long: `gen-pool writes N tasks of three families, as the reference sources look: pymethods2test-like
Python katas (expected test values computed by running the reference implementation with
python3), nl2bash-like shell tasks, and (--pymethods-share) solution-less "pymethods" tasks
shaped like the mission's pool: a small Python project in environment/ (a class with one
method to implement or repair, the project's own tests), pytest tests run by tests/test.sh,
and no solution/. Defects are injected at the given rates and labelled in a sidecar
labels.jsonl: the ground truth for measuring otcurate's filters.

--rates is "default" (about 25% defective), "none", or a list like
"flaky_verifier=0.1,duplicate=0.05" (kinds: ` + strings.Join(poolgen.DefectKinds(), ", ") + `).
It does not apply to the pymethods family, whose defects (--pymethods-rates: "default", about
18% defective, "none", or a list over ` + strings.Join(poolgen.PyMethodsDefectKinds(), ", ") + `) are written
the way real solution-less pools have them and are labelled with the verdict of the
oracle-free verifier gate (nop_passes, reward_missing, flaky_verifier, verifier_needs_network,
slow_verifier). Their hidden reference solutions go to --solutions DIR if asked (the layout
"build --solutions" reads), never into the pool.

--base POOL.parquet copies an existing pool's rows and labels first, unchanged (how the
bundled sample pool gained its pymethods tasks).`,
		Example: `  otcurate gen-pool -n 5000 --seed 1 -o pool.parquet
  otcurate gen-pool -n 50 --seed 3 --dir tasks/ --rates none
  otcurate gen-pool -n 200 --pymethods-share 1 --solutions refs/ -o solutionless.parquet
  otcurate gen-pool -n 10 --seed 2026 --pymethods-share 1 --prefix pymethods \
      --base testdata/sample-pool.parquet -o new-sample.parquet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := parseRates(rates)
			if err != nil {
				return usageErr(err)
			}
			opts.Rates = r
			if opts.PyMethodsRates, err = parsePyMethodsRates(pymRates); err != nil {
				return usageErr(err)
			}
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
	f.Float64Var(&opts.PyMethodsShare, "pymethods-share", 0, "share of solution-less pymethods tasks (0 leaves the pool as it was without the family)")
	f.StringVar(&pymRates, "pymethods-rates", "default", `pymethods defect rates: "default", "none" or "kind=p,..."`)
	f.StringVar(&out.Solutions, "solutions", "", "write the hidden reference solutions of solution-less tasks to DIR/<path>/solution/")
	f.StringVar(&out.Base, "base", "", "copy this parquet pool's rows and labels first (parquet output only)")
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

func parsePyMethodsRates(s string) (poolgen.Rates, error) {
	switch s {
	case "default":
		return poolgen.DefaultPyMethodsRates(), nil
	case "none":
		return poolgen.NoDefects(), nil
	}
	return parseKindRates("--pymethods-rates", s, poolgen.PyMethodsDefectKinds())
}

func parseRates(s string) (poolgen.Rates, error) {
	switch s {
	case "default":
		return poolgen.DefaultRates(), nil
	case "none":
		return poolgen.NoDefects(), nil
	}
	return parseKindRates("--rates", s, poolgen.DefectKinds())
}

func parseKindRates(flag, s string, kinds []string) (poolgen.Rates, error) {
	known := map[string]bool{}
	for _, k := range kinds {
		known[k] = true
	}
	r := poolgen.Rates{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not kind=probability", flag, part)
		}
		if !known[k] {
			return nil, fmt.Errorf("%s: unknown defect kind %q", flag, k)
		}
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || p < 0 || p > 1 {
			return nil, fmt.Errorf("%s: %s must be a probability in [0,1]", flag, k)
		}
		r[k] = p
	}
	return r, nil
}

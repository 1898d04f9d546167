package poolgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// phrasingOf returns the 1-based phrasing of variant (t, v) whose fixed
// text (every fragment between placeholders) the instruction carries, or 0.
func phrasingOf(t *shellTemplate, v int, instruction string) int {
	instruction = strings.ToLower(instruction) // a preamble lower-cases the first letter
	for i, ph := range t.Variants[v].Instr {
		all := true
		for _, frag := range placeholder.Split(ph, -1) {
			all = all && strings.Contains(instruction, strings.ToLower(frag))
		}
		if all {
			return i + 1
		}
	}
	return 0
}

// TestShellSubsetSplits: a pool drawn with --phrasings/--variants holds
// only those phrasings and variants (balanced over the variants kept), so
// the proof-of-learning splits are disjoint by construction.
func TestShellSubsetSplits(t *testing.T) {
	t.Parallel()
	held := []string{"grep_count/v2", "csv_sum"}
	tests := []struct {
		name      string
		subset    ShellSubset
		phrasing  int             // every task's phrasing (0: any)
		variants  map[string]bool // the variants allowed
		nVariants int
	}{
		{"train", ShellSubset{Phrasings: []int{1}, ExcludeVariants: held}, 1, nil, len(shellVariants) - 3},
		{"test-phrasing", ShellSubset{Phrasings: []int{2}, ExcludeVariants: held}, 2, nil, len(shellVariants) - 3},
		{"test-variant", ShellSubset{Variants: held}, 0, map[string]bool{"grep_count/v2": true, "csv_sum/v1": true, "csv_sum/v2": true}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pairs := tc.subset.pairs()
			if len(pairs) != tc.nVariants {
				t.Fatalf("%d variants kept, want %d", len(pairs), tc.nVariants)
			}
			o := Options{N: 2 * len(pairs), Seed: 3, KataShare: -1, Rates: NoDefects(), Balanced: true, Shell: tc.subset}
			count := map[string]int{}
			for _, tk := range generate(t, o) {
				id := strings.TrimPrefix(tk.Label.Template, "nl2bash/")
				count[id]++
				ti, v, err := resolveVariant(id)
				if err != nil {
					t.Fatal(err)
				}
				isHeld := id == "grep_count/v2" || strings.HasPrefix(id, "csv_sum/")
				if (tc.variants == nil) == isHeld || (tc.variants != nil && !tc.variants[id]) {
					t.Errorf("%s: variant %s drawn", tk.Path, id)
				}
				if tc.phrasing > 0 {
					instr := fileOf(tk, "instruction.md")
					if got := phrasingOf(shellTemplates[ti], v, instr); got != tc.phrasing {
						t.Errorf("%s (%s): phrasing %d, want %d: %q", tk.Path, id, got, tc.phrasing, instr)
					}
				}
			}
			for id, n := range count {
				if n != 2 {
					t.Errorf("%s: %d tasks in two balanced rounds, want 2", id, n)
				}
			}
		})
	}
}

// TestShellSubsetValidate: selectors and phrasings that name nothing are
// errors, not silently empty pools.
func TestShellSubsetValidate(t *testing.T) {
	tests := []struct {
		s    ShellSubset
		want string // "" = valid
	}{
		{ShellSubset{}, ""},
		{ShellSubset{Variants: []string{"count_lines", "head_tail/v2"}, Phrasings: []int{2}}, ""},
		{ShellSubset{Variants: []string{"count_line"}}, "unknown"},
		{ShellSubset{ExcludeVariants: []string{"head_tail/v3"}}, "unknown"},
		{ShellSubset{Variants: []string{"count_lines"}, ExcludeVariants: []string{"count_lines"}}, "keeps no variant"},
		{ShellSubset{Phrasings: []int{0}}, "phrasing 0"},
		{ShellSubset{Phrasings: []int{3}}, "phrasing 3"},
		{ShellSubset{Paraphrases: []Paraphrase{{Variant: "count_lines/v1", Text: "Count `@PATH@`."}}}, ""},
		{ShellSubset{Paraphrases: []Paraphrase{{Variant: "count_lines", Text: "x"}}}, "unknown"},
		{ShellSubset{Paraphrases: []Paraphrase{{Variant: "count_lines/v1", Text: " "}}}, "empty"},
		{ShellSubset{Phrasings: []int{1}, Paraphrases: []Paraphrase{{Variant: "count_lines/v1", Text: "x"}}}, "do not combine"},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			err := tc.s.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("%+v: error %v, want %q", tc.s, err, tc.want)
			}
		})
	}
}

// TestParaphrases: the hand-written paraphrase set (testdata) parses, task
// i uses paraphrase i mod n filled from its variant's parameters with no
// preamble, and a placeholder the variant does not define is an error.
func TestParaphrases(t *testing.T) {
	t.Parallel()
	ps, err := ReadParaphrases(filepath.Join("..", "testdata", "paraphrases", "nl2bash.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 30 {
		t.Errorf("%d paraphrases, want 30", len(ps))
	}
	o := Options{N: len(ps), Seed: 4, KataShare: -1, Rates: NoDefects(), Shell: ShellSubset{Paraphrases: ps}}
	for i, tk := range generate(t, o) {
		if got := strings.TrimPrefix(tk.Label.Template, "nl2bash/"); got != ps[i].Variant {
			t.Errorf("%s: variant %s, want %s", tk.Path, got, ps[i].Variant)
		}
		instr := fileOf(tk, "instruction.md")
		if strings.Contains(instr, "@") && placeholder.MatchString(instr) {
			t.Errorf("%s: unfilled placeholder: %q", tk.Path, instr)
		}
		head := strings.SplitN(ps[i].Text, "@", 2)[0]
		if !strings.HasPrefix(instr, head) {
			t.Errorf("%s: %q does not start with the paraphrase %q", tk.Path, instr, head)
		}
	}
	bad := Options{N: 1, Seed: 4, KataShare: -1, Rates: NoDefects(),
		Shell: ShellSubset{Paraphrases: []Paraphrase{{Variant: "count_lines/v2", Text: "Count `@PATH@`."}}}}
	if err := Generate(t.Context(), bad, func(Task) error { return nil }); err == nil || !strings.Contains(err.Error(), "placeholder") {
		t.Errorf("unfilled placeholder: error %v", err)
	}
	if _, err := ReadParaphrases(filepath.Join(t.TempDir(), "none.jsonl")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

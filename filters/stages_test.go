package filters_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/poolgen"
	"github.com/otcurate/otcurate/rundir"
	"github.com/otcurate/otcurate/trial"
)

// TestStageTableAgreesWithStages: every row's constructor builds a stage
// of that name and of the kind the row says, the intake is an Intake, and
// exactly the sandbox stages go through the ledger (Expensive).
func TestStageTableAgreesWithStages(t *testing.T) {
	opts := filters.Options{Runner: &trial.Runner{}} // builds stages, runs nothing
	intakes := 0
	for _, s := range filters.Stages() {
		if s.Intake {
			intakes++
		}
		st, err := s.New(opts)
		if s.WithPolicy && err != nil && strings.Contains(err.Error(), "needs a policy") {
			continue // difficulty: no policy configured
		}
		if s.WithAgainst && err != nil && strings.Contains(err.Error(), "--against") {
			continue // decontam: no benchmark given
		}
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if st.Name() != s.Name {
			t.Errorf("row %s builds stage %s", s.Name, st.Name())
		}
		_, isSet := st.(pipeline.SetStage)
		_, isItem := st.(pipeline.ItemStage)
		if isSet != s.Set || isItem == s.Set {
			t.Errorf("%s: row says set=%v, stage is set=%v item=%v", s.Name, s.Set, isSet, isItem)
		}
		_, isIntake := st.(pipeline.Intake)
		if isIntake != s.Intake {
			t.Errorf("%s: row says intake=%v, stage is %v", s.Name, s.Intake, isIntake)
		}
		if _, exp := st.(pipeline.Expensive); exp != s.Sandbox {
			t.Errorf("%s: row says sandbox=%v, stage is Expensive=%v", s.Name, s.Sandbox, exp)
		}
		if got := pipeline.LayoutOf([]pipeline.Stage{st})[s.Name]; got != s.Format {
			t.Errorf("%s: stage's format %+v, row's %+v", s.Name, got, s.Format)
		}
		if s.Help == "" || s.Reads == "" {
			t.Errorf("%s: no help or reads", s.Name)
		}
	}
	if intakes != 1 {
		t.Errorf("%d intake stages, want 1", intakes)
	}
	// The constants are the table's names, in its order.
	want := []string{filters.StageValidate, filters.StageDedup, filters.StageNearDup, filters.StageDecontam, filters.StageLint, filters.StageEnv, filters.StageFlaky,
		filters.StageVerifierTime, filters.StageCheat, filters.StageDifficulty, filters.StageSelect}
	if got := filters.StageNames(); !slices.Equal(got, want) {
		t.Errorf("table %v, constants %v", got, want)
	}
	// poolgen labels tasks with the stage expected to drop them.
	for _, n := range []string{poolgen.StageValidate, poolgen.StageDedup, poolgen.StageLint, poolgen.StageEnv, poolgen.StageFlaky} {
		if _, ok := filters.LookupStage(n); !ok {
			t.Errorf("poolgen's stage %q is not in the table", n)
		}
	}
}

func TestStageLists(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []string
		want string
	}{
		{"default", filters.DefaultStageList(false), "validate,dedup,near_dup,lint,env,flaky,cheat,select"},
		{"default with a policy", filters.DefaultStageList(true), "validate,dedup,near_dup,lint,env,flaky,cheat,difficulty,select"},
		{"static", filters.StaticStages(), "validate,dedup,near_dup,lint,select"},
		{"with --against", filters.AddAgainstStages(filters.StaticStages()), "validate,dedup,near_dup,decontam,lint,select"},
		{"with --against, no near_dup", filters.AddAgainstStages([]string{"validate", "dedup", "lint"}), "validate,dedup,decontam,lint"},
		{"with --against, validate only", filters.AddAgainstStages([]string{"validate"}), "validate,decontam"},
		{"sandbox", filters.SandboxStages(filters.StageNames()), "env,flaky,cheat,difficulty"},
		{"whole pool", filters.WholePoolStages(filters.StageNames()), "select"},
	} {
		if g := strings.Join(c.got, ","); g != c.want {
			t.Errorf("%s: %s, want %s", c.name, g, c.want)
		}
	}
	l := filters.Layout()
	wantLayout := rundir.Layout{
		"env":           {Evidence: true},
		"flaky":         {Evidence: true, Score: rundir.ScoreSeconds, Proof: true},
		"verifier_time": {Score: rundir.ScoreSeconds},
		"cheat":         {Evidence: true},
		"difficulty":    {Evidence: true, Score: rundir.ScoreRate},
	}
	if len(l) != len(wantLayout) {
		t.Errorf("layout %v, want %v", l, wantLayout)
	}
	for k, v := range wantLayout {
		if l[k] != v {
			t.Errorf("layout of %s: %+v, want %+v", k, l[k], v)
		}
	}
}

func TestParseAndBuildStages(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: "dedup,lint", want: "validate,dedup,lint"},
		{in: " validate , select ", want: "validate,select"},
		{in: "lint,validate", err: "validate must be the first stage"},
		{in: "lint,lint", err: `stage "lint" listed twice`},
		{in: ",", err: "no stages given"},
	} {
		got, err := filters.ParseStages(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("%q: %v %v, want %s", c.in, got, err, c.want)
		}
	}
	_, err := filters.Build([]string{"validate", "nonsense"}, filters.Options{})
	if want := `unknown stage "nonsense" (stages: validate, dedup, near_dup, decontam, lint, env, flaky, verifier_time, cheat, difficulty, select)`; err == nil || err.Error() != want {
		t.Errorf("unknown stage: %v, want %s", err, want)
	}
	_, err = filters.Build([]string{"validate", "flaky"}, filters.Options{})
	if want := "stage flaky runs tasks and needs a sandbox backend"; err == nil || err.Error() != want {
		t.Errorf("no runner: %v, want %s", err, want)
	}
}

// TestReadmeStageDocs: the README's stage lists (the `--stages` row of the
// command table, the paragraph after the stage descriptions and the
// manifest's score columns) say what the table says, and it describes
// every stage.
func TestReadmeStageDocs(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	def, static := strings.Join(filters.DefaultStageList(false), ","), strings.Join(filters.StaticStages(), ",")
	for _, want := range []string{
		"[--stages " + def + "]",
		"(default stages: " + def + ", with " + strings.Join(withPolicy(), ",") + " before select when `--policy` is given; `--stages " + static + "` for a static pass",
		"The default\n`--stages` is `" + def + "`",
		"`--stages " + static + "` is\nthe static pass",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q", want)
		}
	}
	for _, n := range filters.StageNames() {
		if !strings.Contains(readme, "`"+n+"`") {
			t.Errorf("README does not describe stage %s", n)
		}
	}
	// "`<stage>_score` (flaky, verifier_time: median test.sh seconds;
	// difficulty: pass rate)"
	m := regexp.MustCompile("`<stage>_score` \\(([^)]*)\\)").FindStringSubmatch(strings.ReplaceAll(readme, "\n", " "))
	if m == nil {
		t.Fatal("README: no `<stage>_score` description")
	}
	kinds := map[rundir.ScoreKind]string{rundir.ScoreSeconds: "median test.sh seconds", rundir.ScoreRate: "pass rate"}
	documented := map[string]rundir.ScoreKind{}
	for _, part := range strings.Split(m[1], ";") {
		names, kind, _ := strings.Cut(strings.TrimSpace(part), ": ")
		for k, text := range kinds {
			if text == kind {
				for _, n := range strings.Split(names, ",") {
					documented[strings.TrimSpace(n)] = k
				}
			}
		}
	}
	for n, f := range filters.Layout() {
		if f.Score != rundir.NoScore && documented[n] != f.Score {
			t.Errorf("README documents %s's score as %q, the table as %q", n, kinds[documented[n]], kinds[f.Score])
		}
	}
	if len(documented) != countScored() {
		t.Errorf("README documents scores of %v", documented)
	}
}

func withPolicy() []string {
	var out []string
	for _, s := range filters.Stages() {
		if s.WithPolicy {
			out = append(out, s.Name)
		}
	}
	return out
}

func countScored() int {
	n := 0
	for _, f := range filters.Layout() {
		if f.Score != rundir.NoScore {
			n++
		}
	}
	return n
}

// Package poolgen generates realistic, labelled task pools in the Harbor task
// format (`otcurate gen-pool`). The pools are ground truth for measuring
// otcurate's filters: every task carries a Label saying whether it is good
// and, if not, which defect was injected and which stage is expected to drop
// it, with which reason.
//
// Three task families are produced:
//
//   - "kata": pymethods2test-like single-function Python contracts (a
//     docstring-style instruction, pytest tests, an oracle that writes
//     /app/solution.py), drawn from kata families of a few variants each.
//     The reference and wrong implementations are Python files under
//     katas/, embedded with go:embed (kata_families.go holds the rest:
//     test-case generators, wording, mutations). Expected values in the
//     tests are computed by running the reference implementation; nothing
//     is hand-computed in Go.
//   - "nl2bash": short shell tasks over seed files baked into the image
//     (environment/seeds/ copied to /app/data/), checked by a bash verifier
//     against an expected output computed from a Python model of the oracle
//     command (the tests check the model against the real oracle run on the
//     host; Options.HostCheck does it for every task).
//   - "pymethods" (Options.PyMethodsShare): solution-less tasks shaped like
//     the mission's pool: a small Python project in environment/ with its
//     own tests, a method to implement or repair, pytest run by
//     tests/test.sh, no solution/ (the reference stays hidden in
//     Task.Solution). Its defects and labels are its own (pymethods.go):
//     written the way real solution-less verifiers have them, and labelled
//     with the verdict of the oracle-free verifier gate.
//
// The Python work runs in batch.py (embedded too), one python3 subprocess
// per chunk of tasks, chunks computed ahead in parallel and emitted in
// order. Defects (Rates, DefectKinds) are injected at every level a real
// pool breaks: the gzip/tar bytes, the bundle's structure, task.toml, the
// Dockerfile, and the verifier's or oracle's runtime behaviour. Generate
// streams the tasks; WritePool writes them as a parquet dataset or as task
// directories, with a labels.jsonl sidecar.
//
// Everything is deterministic from Options (the seed in particular): the
// same options give byte-identical pools.
package poolgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/otcurate/otcurate/bundle"
)

// Options configures a generated pool.
type Options struct {
	N          int     // number of tasks
	Seed       int64   // everything is deterministic from the seed
	KataShare  float64 // share of pymethods2test-like katas; the rest are nl2bash-like (default 0.7 when 0; negative means no katas)
	Rates      Rates   // defect injection rates (each a probability per task; a task gets at most one defect); nil means DefaultRates()
	Python     string  // python3 interpreter used to compute expected values (default "python3")
	PathPrefix string  // task path prefix, default "task" -> "task-00000"

	// ChunkSize is the number of tasks planned and computed per python3
	// subprocess (default 2000). The next chunk is computed while the
	// current one is emitted. It does not change the output.
	ChunkSize int
	// HostCheck runs every generated task that has a working oracle (good
	// tasks and the runtime defects that keep a correct oracle and verifier)
	// on the host, in a temporary directory with the container paths
	// remapped, and fails Generate if the oracle does not earn reward 1. It
	// spawns a few processes per task, so it is meant for small pools.
	HostCheck bool
	// PyMethodsShare is the share of solution-less pymethods tasks (see
	// FamilyPyMethods), drawn from a random stream of its own: with 0 the
	// pool is the one these options gave before the family existed, and
	// with s > 0 every task that is not a pymethods task is the same as
	// at 0 (except a duplicate, whose original is drawn among the good
	// tasks generated before it, pymethods tasks included).
	PyMethodsShare float64
	// PyMethodsRates are the pymethods family's defect rates (kinds:
	// PyMethodsDefectKinds); nil means DefaultPyMethodsRates(). Rates does
	// not apply to the family.
	PyMethodsRates Rates

	// Balanced draws each family's variants in shuffled rounds (every
	// template variant once per round, by task number) instead of
	// independently, so a small pool covers them evenly: a 96-task shell
	// pool drawn independently can hold one task of a variant and six of
	// another. Whether a task is a kata or a shell task stays a draw.
	Balanced bool
	// Shell restricts the nl2bash variants and phrasings drawn, or
	// replaces the phrasings with paraphrases (see ShellSubset).
	Shell ShellSubset
}

// Rates maps a defect kind to its probability per task. DefaultRates returns
// a realistic mix (about 25% defective overall); NoDefects returns an empty,
// non-nil map.
type Rates map[string]float64

// Task is one generated task. Exactly one of Entries / Blob is set: Blob is
// used for codec-level defects whose bytes bundle.Encode cannot produce (not
// gzip, truncated, absolute members...). Entries share their Data between
// tasks (duplicates are byte-identical copies): emit must not modify them.
type Task struct {
	Path    string
	Entries []bundle.Entry
	Blob    []byte
	Label   Label
	// Solution is the hidden reference solution of a solution-less task
	// (the pymethods family): solution/ entries that solve it, never part
	// of the bundle. WritePool writes them only when asked
	// (Output.Solutions); tests use them to prove the task solvable.
	Solution []bundle.Entry
}

// Label is the ground truth for one task, written as one JSON line in a
// sidecar labels.jsonl.
type Label struct {
	Path           string         `json:"path"`
	Family         string         `json:"family"`                    // "kata" | "nl2bash" | "pymethods"
	Template       string         `json:"template"`                  // function family / shell template id, e.g. "kata/run_length_encode/v2"
	Dockerfile     string         `json:"dockerfile"`                // id of the shared Dockerfile used ("<base>+<defect>" when a defect rewrote it)
	Defect         string         `json:"defect,omitempty"`          // "" for a good task, else one of DefectKinds()
	Params         map[string]any `json:"params,omitempty"`          // e.g. {"flake_prob":0.3} or {"sleep_sec":40}; "mode" names the defect's sub-variant
	DuplicateOf    string         `json:"duplicate_of,omitempty"`    // path of the original for "duplicate"
	ExpectedStage  string         `json:"expected_stage,omitempty"`  // stage expected to drop it: validate|dedup|lint|env|flaky
	ExpectedReason string         `json:"expected_reason,omitempty"` // reason code where already defined, else ""
}

// Families.
const (
	FamilyKata    = "kata"
	FamilyNL2Bash = "nl2bash"
)

// Expected stages.
const (
	StageValidate = "validate"
	StageDedup    = "dedup"
	StageLint     = "lint"
	StageEnv      = "env"
	StageFlaky    = "flaky"
)

// Defect kinds.
const (
	DefectNotGzip            = "not_gzip"
	DefectTruncatedGzip      = "truncated_gzip"
	DefectNotTar             = "not_tar"
	DefectAbsoluteMember     = "absolute_member"
	DefectDotdotMember       = "dotdot_member"
	DefectLinkEscape         = "link_escape"
	DefectDeviceFile         = "device_file"
	DefectGzipBomb           = "gzip_bomb"
	DefectTooManyMembers     = "too_many_members"
	DefectEmptyBlob          = "empty_blob"
	DefectMissingInstruction = "missing_instruction"
	DefectMissingTaskToml    = "missing_task_toml"
	DefectMissingEnvironment = "missing_environment"
	DefectMissingTestScript  = "missing_test_script"
	DefectInvalidTaskToml    = "invalid_task_toml"
	DefectDuplicate          = "duplicate"
	DefectFlakyVerifier      = "flaky_verifier"
	DefectSlowVerifier       = "slow_verifier"
	DefectHangingVerifier    = "hanging_verifier"
	DefectNopPasses          = "nop_passes"
	DefectWrongOracle        = "wrong_oracle"
	DefectRewardMissing      = "reward_missing"
	DefectRewardGarbage      = "reward_garbage"
	DefectBuildFails         = "build_fails"
	DefectBuildSlow          = "build_slow"
	DefectTestsInImage       = "tests_in_image"
	DefectNetworkVerifier    = "network_verifier"
	DefectInstructionReveals = "instruction_reveals"
	DefectNoSolution         = "no_solution"
)

// ReasonDuplicateContent is the reason code of the dedup stage for a
// byte-identical copy.
const ReasonDuplicateContent = "duplicate_content"

type defectInfo struct {
	stage  string
	reason string
	blob   bool    // delivered as Task.Blob
	rate   float64 // default rate
}

var defects = map[string]defectInfo{
	DefectNotGzip:            {StageValidate, bundle.ReasonNotGzip, true, 0.004},
	DefectTruncatedGzip:      {StageValidate, bundle.ReasonTruncatedGzip, true, 0.004},
	DefectNotTar:             {StageValidate, bundle.ReasonNotTar, true, 0.004},
	DefectAbsoluteMember:     {StageValidate, bundle.ReasonUnsafeMemberPath, true, 0.004},
	DefectDotdotMember:       {StageValidate, bundle.ReasonUnsafeMemberPath, true, 0.004},
	DefectLinkEscape:         {StageValidate, bundle.ReasonLinkEscapesTree, true, 0.004},
	DefectDeviceFile:         {StageValidate, bundle.ReasonSpecialFile, true, 0.004},
	DefectGzipBomb:           {StageValidate, bundle.ReasonUncompressedTooBig, true, 0.004},
	DefectTooManyMembers:     {StageValidate, bundle.ReasonTooManyMembers, true, 0.004},
	DefectEmptyBlob:          {StageValidate, bundle.ReasonEmptyBlob, true, 0.004},
	DefectMissingInstruction: {StageValidate, bundle.ReasonMissingInstruction, false, 0.006},
	DefectMissingTaskToml:    {StageValidate, bundle.ReasonMissingTaskToml, false, 0.006},
	DefectMissingEnvironment: {StageValidate, bundle.ReasonMissingEnvironment, false, 0.006},
	DefectMissingTestScript:  {StageValidate, bundle.ReasonMissingTestScript, false, 0.006},
	DefectInvalidTaskToml:    {StageValidate, bundle.ReasonInvalidTaskToml, false, 0.006},
	DefectDuplicate:          {StageDedup, ReasonDuplicateContent, false, 0.03},
	DefectFlakyVerifier:      {StageFlaky, "", false, 0.03},
	DefectSlowVerifier:       {StageFlaky, "", false, 0.01},
	DefectHangingVerifier:    {StageFlaky, "", false, 0.005},
	DefectNopPasses:          {StageFlaky, "", false, 0.01},
	DefectWrongOracle:        {StageFlaky, "", false, 0.015},
	DefectRewardMissing:      {StageFlaky, "", false, 0.01},
	DefectRewardGarbage:      {StageFlaky, "", false, 0.01},
	DefectBuildFails:         {StageEnv, "", false, 0.01},
	DefectBuildSlow:          {StageEnv, "", false, 0.005},
	DefectTestsInImage:       {StageLint, "", false, 0.01},
	DefectNetworkVerifier:    {StageLint, "", false, 0.01},
	DefectInstructionReveals: {StageLint, "", false, 0.015},
	DefectNoSolution:         {StageLint, "", false, 0.01},
}

// DefectKinds lists every defect kind name, sorted.
func DefectKinds() []string {
	out := make([]string, 0, len(defects))
	for k := range defects {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DefectStage returns the stage expected to drop a task with the given
// defect kind and the reason code it should report ("" where the stage has
// no fixed code). ok is false for an unknown kind.
func DefectStage(kind string) (stage, reason string, ok bool) {
	d, ok := defects[kind]
	return d.stage, d.reason, ok
}

// IsBlobDefect reports whether tasks with this defect are delivered as a
// Blob rather than Entries.
func IsBlobDefect(kind string) bool { return defects[kind].blob }

// DefaultRates returns a realistic mix: 0.4% for each codec kind, 0.6% for
// each structural kind, 3% duplicates, 3% flaky verifiers and 0.5-1.5% for
// each other runtime, environment and lint defect; 25% in total.
func DefaultRates() Rates {
	r := Rates{}
	for k, d := range defects {
		r[k] = d.rate
	}
	return r
}

// NoDefects returns an empty rate map: every task is good.
func NoDefects() Rates { return Rates{} }

// Total returns the sum of the rates.
func (r Rates) Total() float64 {
	t := 0.0
	for _, v := range r {
		t += v
	}
	return t
}

// HeavyKinds are the defect kinds whose blobs are expensive to build or to
// decode (gzip_bomb inflates to more than 600 MiB, too_many_members has more
// than 20,000 members).
var HeavyKinds = []string{DefectGzipBomb, DefectTooManyMembers}

// IsHeavy reports whether kind is one of HeavyKinds.
func IsHeavy(kind string) bool { return kind == DefectGzipBomb || kind == DefectTooManyMembers }

// Without returns a copy of r with the given kinds removed.
func (r Rates) Without(kinds ...string) Rates {
	out := Rates{}
	for k, v := range r {
		out[k] = v
	}
	for _, k := range kinds {
		delete(out, k)
	}
	return out
}

func (r Rates) validate() error {
	total := 0.0
	for k, v := range r {
		if _, ok := defects[k]; !ok {
			return fmt.Errorf("poolgen: unknown defect kind %q", k)
		}
		if v < 0 || math.IsNaN(v) || v > 1 {
			return fmt.Errorf("poolgen: rate of %s is %v, want a probability", k, v)
		}
		total += v
	}
	if total > 1+1e-9 {
		return fmt.Errorf("poolgen: defect rates add up to %.4f > 1", total)
	}
	return nil
}

// WriteLabels writes labels as JSON lines.
func WriteLabels(w io.Writer, labels []Label) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range labels {
		if err := enc.Encode(&labels[i]); err != nil {
			return err
		}
	}
	return nil
}

// ReadLabels reads JSON lines written by WriteLabels.
func ReadLabels(r io.Reader) ([]Label, error) {
	dec := json.NewDecoder(r)
	var out []Label
	for {
		var l Label
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
}

func (o Options) withDefaults() Options {
	if o.KataShare == 0 {
		o.KataShare = 0.7
	}
	if o.KataShare < 0 {
		o.KataShare = 0
	}
	if o.Rates == nil {
		o.Rates = DefaultRates()
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.PathPrefix == "" {
		o.PathPrefix = "task"
	}
	if o.PyMethodsRates == nil {
		o.PyMethodsRates = DefaultPyMethodsRates()
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 2000
	}
	return o
}

// taskRand returns the random stream of task i: tasks are independent of
// each other and of the chunking.
func taskRand(seed int64, i int, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x6a09e667f3bcc909, uint64(i)*0x9e3779b97f4a7c15+stream))
}

// pathWidth is the zero-padding of task numbers: at least 5 digits and
// enough for N-1, so paths sort in generation order.
func pathWidth(n int) int {
	w := 5
	for m := n - 1; m >= 100000; m /= 10 {
		w++
	}
	return w
}

// Generate emits N tasks in path order through emit. It returns the first
// error from emit or from computing expected values.
func Generate(ctx context.Context, opts Options, emit func(Task) error) error {
	o := opts.withDefaults()
	if o.N < 0 {
		return fmt.Errorf("poolgen: negative N")
	}
	if err := o.Rates.validate(); err != nil {
		return err
	}
	if err := o.Shell.Validate(); err != nil {
		return err
	}
	if err := validatePyMethodsRates(o.PyMethodsRates); err != nil {
		return err
	}
	if o.PyMethodsShare < 0 || o.PyMethodsShare > 1 || o.PyMethodsShare != o.PyMethodsShare {
		return fmt.Errorf("poolgen: pymethods share %v is not in [0,1]", o.PyMethodsShare)
	}
	if o.N == 0 {
		return nil
	}
	return newGenerator(o).run(ctx, emit)
}

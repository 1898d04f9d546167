// Package train is otcurate's RL loop: RLOO (rloo_n) on a curated task
// set, rolling a policy out through the agent harness in sandboxes,
// scoring every attempt with the task's verifier, and updating the policy
// through a Learner: in process for the built-in policy (Builtin, a
// PPO-clip step on its weights), or through an external learner process
// for a served model (External: experience parquet out, a published
// version back; see integrations/learner).
//
// Each step draws B tasks (seeded epochs; optionally sitting out tasks
// whose whole group passed), plays K attempts of each, and computes
// leave-one-out advantages (RLOON) over the attempts that were scored:
// infrastructure failures and task defects stay out of the baseline, and
// too many infrastructure failures stop the run. Steps append to
// RUN_DIR/metrics.jsonl, held-out greedy evaluations to eval.jsonl, and
// checkpoints plus state.json make a run resumable to the same draws.
package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	cpool "github.com/sourcegraph/conc/pool"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/atomicfile"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
	"github.com/otcurate/otcurate/trial"
)

// Options configure a training run.
type Options struct {
	Data    pool.Source // the curated task set
	Eval    pool.Source // held-out tasks for greedy evaluation (optional)
	Runner  *trial.Runner
	Labels  map[string]string
	Limits  bundle.Limits
	Policy  policy.Policy
	Learner Learner
	Harness agent.Config // its Sampling is the rollout sampling (temperature > 0)

	GroupSize  int // K attempts per task; default 8
	BatchTasks int // B tasks per step; default 8
	Steps      int // S; default 10
	Seed       int64
	MinGroup   int // rloo_n minimum usable group size; default min(4, K)
	EvalEvery  int // also evaluate every N steps (0: before and after only)
	Workers    int // rollouts in flight; default 4
	// MaxInfraShare stops the run when more than this share of a step's
	// rollouts fail on infrastructure (default 0.5; 1 never stops).
	MaxInfraShare float64
	RunDir        string
	Resume        bool
	Logger        *slog.Logger
	// Fingerprint describes the settings that must not change across a
	// resume (checked against the run directory's state).
	Fingerprint string
	// SkipSolved > 0 sends a task whose whole group passed out of the
	// draw for that many epochs (see sampler); 0 draws plain seeded epochs.
	SkipSolved int
	// ShuffleRewards is the shuffled-reward control: each step the
	// scored rewards are permuted across the step's samples (a seeded
	// permutation of Seed and the step) before the advantages, so the
	// learner updates on the same rollouts with a signal that no longer
	// says which attempt earned what. The step's metrics and the
	// skip-solved sampler keep the true rewards.
	ShuffleRewards bool
	// Tests are test splits evaluated greedily like Eval, but only before
	// the first step and after the last (never in between, so no choice
	// can be made on them mid-run), each to RUN_DIR/test-NAME.jsonl.
	Tests []EvalSet
	// SkipEvalBefore leaves out the evaluations before step 1. They depend
	// only on the starting weights (greedy decoding), so runs that share
	// them (the arms and seeds of scripts/proof-of-learning.sh) can take
	// them from one run that made them.
	SkipEvalBefore bool
	// OnStep is called after each step's metrics are written.
	OnStep func(Metrics)
}

// EvalSet is a named held-out task set.
type EvalSet struct {
	Name   string
	Source pool.Source
}

// Metrics are one step's numbers, one JSON line in RUN_DIR/metrics.jsonl.
type Metrics struct {
	Step              int     `json:"step"`
	Tasks             int     `json:"tasks"`
	Samples           int     `json:"samples"`
	MeanReward        float64 `json:"mean_reward"` // over scored samples
	PassAt1           float64 `json:"pass_at_1"`   // share of scored samples with reward 1
	PassAtK           float64 `json:"pass_at_k"`   // share of tasks with at least one success
	ZeroVarianceShare float64 `json:"zero_variance_share"`
	BelowMinShare     float64 `json:"below_min_share"`
	InfraFailureRate  float64 `json:"infra_failure_rate"`
	Excluded          int     `json:"excluded"`  // out of the baseline (infrastructure or a broken task)
	Truncated         int     `json:"truncated"` // turn cap, timeout or context: the verifier's reward kept
	// Tampered counts attempts whose changes touched the verifier's trust
	// base (trial.Result.Tampered): the reward is what the rest earned; a
	// rising count is the policy learning to hack its reward.
	Tampered         int     `json:"tampered"`
	Turns            int     `json:"turns"`
	Tokens           int     `json:"tokens"`
	MeanAbsAdvantage float64 `json:"mean_abs_advantage"`
	LogprobGap       float64 `json:"logprob_gap"`       // mean |behaviour − learner| log-probability per action
	Entropy          float64 `json:"entropy,omitempty"` // mean entropy per turn of the turns the entropy bonus acts on (built-in policy with a bonus)
	GradNorm         float64 `json:"grad_norm"`
	LR               float64 `json:"lr,omitempty"` // the learning rate this step applied (built-in policy)
	Clipped          int     `json:"clipped"`      // actions whose PPO ratio was clipped
	// Groups are the step's tasks in batch order with the attempts the
	// verifier scored and those that passed: which tasks carried signal.
	Groups           []GroupMetrics `json:"groups"`
	PolicyVersion    string         `json:"policy_version"`
	PolicyVersionLag int            `json:"policy_version_lag"`
	RolloutSeconds   float64        `json:"rollout_seconds"`  // wall time of the rollout phase
	SandboxSeconds   float64        `json:"sandbox_seconds"`  // summed build/start/verify/teardown time
	VerifierSeconds  float64        `json:"verifier_seconds"` // summed test.sh time
	ModelSeconds     float64        `json:"model_seconds"`    // summed policy time
	UpdateSeconds    float64        `json:"update_seconds"`
	StepSeconds      float64        `json:"step_seconds"`
	OverheadShare    float64        `json:"overhead_share"` // (step − rollout phase) / step: the trainer's own share
}

// EvalResult is one held-out evaluation, a line in RUN_DIR/eval.jsonl.
type EvalResult struct {
	Step     int      `json:"step"`
	Tasks    int      `json:"tasks"`
	Scored   int      `json:"scored"`
	Passed   int      `json:"passed"`
	PassRate float64  `json:"pass_rate"`
	Failed   []string `json:"failed,omitempty"` // tasks not scored (infrastructure or a task defect)
	// Episodes are the greedy episodes behind the numbers, in task order.
	Episodes []EvalEpisode `json:"episodes"`
}

// EvalEpisode is one held-out task's greedy episode: its reward and the
// commands the policy typed.
type EvalEpisode struct {
	Task     string   `json:"task"`
	Outcome  string   `json:"outcome"`
	Reward   float64  `json:"reward"`
	Commands []string `json:"commands"`
}

// Sample is one rollout of a step.
type Sample struct {
	Task      string
	Group     int // index of the task in the step
	Index     int // attempt within the group
	Attempt   agent.Attempt
	Reward    float64
	Included  bool   // in the baseline and the loss
	Exclusion string // why not
	// ZeroedBy is the task-defect outcome scored 0 instead of excluded
	// (trial.Outcome.AfterAgent: one the agent could have caused).
	ZeroedBy  string
	Advantage float64
}

// state is RUN_DIR/state.json: the last completed step.
type state struct {
	Step        int    `json:"step"`
	Checkpoint  string `json:"checkpoint"`
	Fingerprint string `json:"fingerprint"`
}

type task struct {
	path string
	t    *trial.Task
}

// Run trains. It returns the metrics of the steps it ran.
func Run(ctx context.Context, o Options) ([]Metrics, error) {
	o = o.withDefaults()
	log := o.Logger
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return nil, err
	}
	tasks, err := loadTasks(ctx, o.Data, o.Limits, log)
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, errors.New("train: the data set has no valid task")
	}
	var evalTasks []task
	if o.Eval != nil {
		if evalTasks, err = loadTasks(ctx, o.Eval, o.Limits, log); err != nil {
			return nil, err
		}
	}
	testTasks := make([][]task, len(o.Tests))
	for i, ts := range o.Tests {
		if testTasks[i], err = loadTasks(ctx, ts.Source, o.Limits, log); err != nil {
			return nil, fmt.Errorf("train: test split %s: %w", ts.Name, err)
		}
	}
	evalAll := func(step int, final bool) error {
		if len(evalTasks) > 0 && (final || step == 0 || (o.EvalEvery > 0 && step%o.EvalEvery == 0)) {
			if err := evaluate(ctx, o, evalTasks, step, "eval.jsonl"); err != nil {
				return err
			}
		}
		if step == 0 || final {
			for i, ts := range o.Tests {
				if err := evaluate(ctx, o, testTasks[i], step, testFile(ts.Name)); err != nil {
					return fmt.Errorf("train: test split %s: %w", ts.Name, err)
				}
			}
		}
		return nil
	}

	samp := newSampler(len(tasks), o.BatchTasks, o.Seed, o.SkipSolved, o.MinGroup)
	start := 0
	st, err := readState(o.RunDir)
	switch {
	case err == nil && !o.Resume:
		return nil, fmt.Errorf("train: %s already holds a run (step %d); pass --resume or use a new run directory", o.RunDir, st.Step)
	case err == nil:
		if st.Fingerprint != o.Fingerprint {
			return nil, fmt.Errorf("train: cannot resume %s: its settings differ (%s, now %s)", o.RunDir, st.Fingerprint, o.Fingerprint)
		}
		if err := o.Learner.Restore(filepath.Join(o.RunDir, st.Checkpoint)); err != nil {
			return nil, fmt.Errorf("train: resume: %w", err)
		}
		metrics, err := truncateJSONL(filepath.Join(o.RunDir, "metrics.jsonl"), st.Step, log)
		if err != nil {
			return nil, err
		}
		for _, name := range append([]string{"eval.jsonl"}, testFiles(o.Tests)...) {
			if _, err := truncateJSONL(filepath.Join(o.RunDir, name), st.Step, log); err != nil {
				return nil, err
			}
		}
		start = st.Step
		if err := replaySampler(samp, metrics, start, tasks); err != nil {
			return nil, err
		}
		log.Info("resuming", "run_dir", o.RunDir, "after_step", start)
	case errors.Is(err, os.ErrNotExist):
		if err := checkpoint(o, 0); err != nil {
			return nil, err
		}
		if !o.SkipEvalBefore {
			if err := evalAll(0, false); err != nil {
				return nil, err
			}
		}
	default:
		return nil, err
	}

	var out []Metrics
	for step := start + 1; step <= o.Steps; step++ {
		idx := samp.next(step)
		m, err := runStep(ctx, o, tasks, step, idx)
		if err != nil {
			return out, err
		}
		if err := samp.observe(idx, m.Groups); err != nil {
			return out, err
		}
		if err := checkpoint(o, step); err != nil {
			return out, err
		}
		if err := appendJSONL(filepath.Join(o.RunDir, "metrics.jsonl"), m); err != nil {
			return out, err
		}
		if err := evalAll(step, step == o.Steps); err != nil {
			return out, err
		}
		if err := writeState(o.RunDir, state{Step: step, Checkpoint: checkpointName(step), Fingerprint: o.Fingerprint}); err != nil {
			return out, err
		}
		out = append(out, m)
		log.Info("step", "step", step, "mean_reward", m.MeanReward, "pass_at_1", m.PassAt1,
			"zero_variance", m.ZeroVarianceShare, "infra", m.InfraFailureRate, "tampered", m.Tampered, "seconds", m.StepSeconds)
		if o.OnStep != nil {
			o.OnStep(m)
		}
	}
	return out, nil
}

func (o Options) withDefaults() Options {
	if o.GroupSize <= 0 {
		o.GroupSize = 8
	}
	if o.BatchTasks <= 0 {
		o.BatchTasks = 8
	}
	if o.Steps <= 0 {
		o.Steps = 10
	}
	if o.MinGroup <= 0 {
		o.MinGroup = min(4, o.GroupSize)
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.MaxInfraShare <= 0 {
		o.MaxInfraShare = 0.5
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// loadTasks decodes and validates every task of a set.
func loadTasks(ctx context.Context, src pool.Source, lim bundle.Limits, log *slog.Logger) ([]task, error) {
	var out []task
	err := src.Each(ctx, nil, func(rec pool.Record) error {
		if rec.Err != nil {
			log.Warn("skipping an unreadable task", "task", rec.Path, "err", rec.Err)
			return nil
		}
		t, err := trial.LoadTask(rec.Path, rec.Blob, lim)
		if err != nil {
			log.Warn("skipping an invalid task", "task", rec.Path, "err", err)
			return nil
		}
		out = append(out, task{path: rec.Path, t: t})
		return nil
	})
	return out, err
}

// batch returns the tasks of a step: epochs are seeded permutations of
// the set, consumed B at a time (a pure function of seed and step, so a
// resumed run samples what the uninterrupted one would).
func batch(n, b int, seed int64, step int) []int {
	out := make([]int, 0, b)
	pos := (step - 1) * b
	for len(out) < b && len(out) < n {
		epoch, off := pos/n, pos%n
		perm := rand.New(rand.NewPCG(uint64(seed), uint64(epoch)+1)).Perm(n)
		out = append(out, perm[off])
		pos++
	}
	return out
}

// GroupMetrics is one task's group in a step.
type GroupMetrics struct {
	Task   string `json:"task"`
	Scored int    `json:"scored"` // attempts in the baseline (not infrastructure failures or task defects)
	Passed int    `json:"passed"` // attempts with reward 1
}

// runStep rolls out, scores, computes advantages and updates.
func runStep(ctx context.Context, o Options, tasks []task, step int, idx []int) (Metrics, error) {
	t0 := time.Now()
	samples := make([]Sample, 0, len(idx)*o.GroupSize)
	for g, ti := range idx {
		for k := 0; k < o.GroupSize; k++ {
			samples = append(samples, Sample{Task: tasks[ti].path, Group: g, Index: k})
		}
	}
	version := o.Learner.Version()

	// Rollouts, Workers at a time.
	jobs := make([]job, len(samples))
	for i, s := range samples {
		jobs[i] = job{tasks[idx[s.Group]].t, fmt.Sprintf("train/%d/%s/%d", step, s.Task, s.Index)}
	}
	// An external learner needs token ids and behaviour logprobs (for a
	// served model, return_token_ids and logprobs), whatever the caller's
	// harness configuration said. The built-in learner recomputes its own.
	harness := o.Harness
	if _, ok := o.Learner.(*External); ok {
		harness.Rollout = true
	}
	attempts, err := o.attempts(ctx, harness, jobs)
	if err != nil {
		return Metrics{}, err
	}
	for i := range samples {
		samples[i].Attempt = attempts[i]
	}
	rollout := time.Since(t0)

	// Classify and score.
	m := Metrics{Step: step, Tasks: len(idx), Samples: len(samples), PolicyVersion: version, RolloutSeconds: rollout.Seconds()}
	infra := score(&m, samples, len(idx), o.MinGroup)
	if o.ShuffleRewards {
		shuffleRewards(&m, samples, len(idx), o.MinGroup, rand.New(rand.NewPCG(uint64(o.Seed)^0x5bd1e995, uint64(step))))
	}
	if o.MaxInfraShare < 1 && float64(infra) > o.MaxInfraShare*float64(len(samples)) {
		// The machine, not the policy, failed this step: stop instead of
		// burning steps without signal. No checkpoint is written for it,
		// so --resume redoes it.
		return m, fmt.Errorf("step %d: %d of %d rollouts failed on infrastructure (more than %.0f%%); stopping, continue with --resume",
			step, infra, len(samples), 100*o.MaxInfraShare)
	}

	// Update.
	t1 := time.Now()
	us, err := o.Learner.Update(ctx, step, samples)
	if err != nil {
		return m, fmt.Errorf("step %d: update: %w", step, err)
	}
	m.UpdateSeconds = time.Since(t1).Seconds()
	m.LogprobGap, m.GradNorm, m.Clipped, m.Entropy, m.LR = us.LogprobGap, us.GradNorm, us.Clipped, us.Entropy, us.LR
	m.PolicyVersionLag = us.VersionLag
	m.StepSeconds = time.Since(t0).Seconds()
	m.OverheadShare = (m.StepSeconds - m.RolloutSeconds) / m.StepSeconds
	return m, nil
}

// include decides whether a rollout enters the RLOO baseline and the loss,
// from its result's predicates: an infrastructure failure or a task defect
// stays out (with the reason in Exclusion); a scored attempt is in with
// its reward. A policy that ran out of time (trajectory end agent_timeout)
// is scored: its reward stands, like max_turns and context_exceeded.
func (s *Sample) include() {
	r := s.Attempt.Result
	switch {
	case r.Infra():
		s.Exclusion = string(r.Outcome)
	case r.Outcome.AfterAgent():
		// The agent may have caused it (broken the verifier's tools, left a
		// FIFO, filled the disk): scored 0, so failing this way never beats
		// failing the task.
		s.Included, s.Reward, s.ZeroedBy = true, 0, string(r.Outcome)
	case r.TaskDefect():
		s.Exclusion = "task_defect:" + string(r.Outcome)
	default:
		s.Included, s.Reward = true, *r.Reward
	}
}

// score classifies a step's rolled-out samples (include), sets their
// advantages (RLOON over groups of groupCount tasks) and fills m's reward,
// advantage, group, time and token metrics. It returns the number of
// infrastructure failures.
func score(m *Metrics, samples []Sample, groupCount, minGroup int) (infra int) {
	rewards := make([]float64, len(samples))
	included := make([]bool, len(samples))
	groups := make([]int, len(samples))
	m.Groups = make([]GroupMetrics, groupCount)
	var scored, passed int
	for i := range samples {
		s := &samples[i]
		r := s.Attempt.Result
		groups[i] = s.Group
		gm := &m.Groups[s.Group]
		gm.Task = s.Task
		d := r.Durations
		m.SandboxSeconds += d.Build + d.Start + d.Verify + d.Teardown
		m.VerifierSeconds += d.Verifier
		if tr := s.Attempt.Trajectory; tr != nil {
			m.ModelSeconds += tr.ModelSeconds()
			m.Turns += len(tr.Turns)
			m.Tokens += tr.PromptTokens + tr.CompletionTokens
			switch tr.End {
			case agent.MaxTurns, agent.AgentTimeout, agent.ContextExceeded:
				m.Truncated++ // passthrough: the verifier's reward stands
			}
		}
		if len(r.Tampered) > 0 {
			m.Tampered++
		}
		s.include()
		if r.Infra() {
			infra++
		}
		if s.Included {
			scored++
			gm.Scored++
			if r.Passed() {
				passed++
				gm.Passed++
			}
			m.MeanReward += s.Reward
		}
		rewards[i], included[i] = s.Reward, s.Included
	}
	adv, gs := RLOON(rewards, included, groups, minGroup)
	for i := range samples {
		samples[i].Advantage = adv[i]
		m.MeanAbsAdvantage += math.Abs(adv[i])
	}
	if scored > 0 {
		m.MeanReward /= float64(scored)
		m.PassAt1 = float64(passed) / float64(scored)
	}
	m.MeanAbsAdvantage /= float64(len(samples))
	solved := 0
	for _, g := range m.Groups {
		if g.Passed > 0 {
			solved++
		}
	}
	m.PassAtK = float64(solved) / float64(groupCount)
	m.ZeroVarianceShare = float64(gs.ZeroVariance) / float64(gs.Groups)
	m.BelowMinShare = float64(gs.BelowMin) / float64(gs.Groups)
	m.Excluded = gs.Excluded
	m.InfraFailureRate = float64(infra) / float64(len(samples))
	return infra
}

// shuffleRewards is the shuffled-reward control: it permutes the rewards
// of the included samples across the whole step and recomputes their
// advantages (RLOON) and m's mean |advantage| from them. Everything else
// in m (rewards, passes, groups) keeps describing what really happened.
func shuffleRewards(m *Metrics, samples []Sample, groupCount, minGroup int, r *rand.Rand) {
	var inc []int
	for i := range samples {
		if samples[i].Included {
			inc = append(inc, i)
		}
	}
	perm := r.Perm(len(inc))
	vals := make([]float64, len(inc))
	for j, i := range inc {
		vals[perm[j]] = samples[i].Reward
	}
	rewards := make([]float64, len(samples))
	included := make([]bool, len(samples))
	groups := make([]int, len(samples))
	for j, i := range inc {
		samples[i].Reward = vals[j]
	}
	for i := range samples {
		rewards[i], included[i], groups[i] = samples[i].Reward, samples[i].Included, samples[i].Group
	}
	adv, _ := RLOON(rewards, included, groups, minGroup)
	m.MeanAbsAdvantage = 0
	for i := range samples {
		samples[i].Advantage = adv[i]
		m.MeanAbsAdvantage += math.Abs(adv[i])
	}
	m.MeanAbsAdvantage /= float64(len(samples))
}

func testFile(name string) string { return "test-" + name + ".jsonl" }

func testFiles(sets []EvalSet) []string {
	out := make([]string, len(sets))
	for i, ts := range sets {
		out[i] = testFile(ts.Name)
	}
	return out
}

// evaluate plays one greedy episode per held-out task and appends the
// result to RUN_DIR/file.
func evaluate(ctx context.Context, o Options, tasks []task, step int, file string) error {
	cfg := o.Harness
	cfg.Sampling.Temperature = 0
	res := EvalResult{Step: step, Tasks: len(tasks)}
	jobs := make([]job, len(tasks))
	for i, tk := range tasks {
		jobs[i] = job{tk.t, "eval/" + tk.path}
	}
	attempts, err := o.attempts(ctx, cfg, jobs)
	if err != nil {
		return err
	}
	for i, a := range attempts {
		ep := EvalEpisode{Task: tasks[i].path, Outcome: string(a.Result.Outcome), Reward: a.Reward(), Commands: []string{}}
		if a.Trajectory != nil {
			ep.Commands = a.Trajectory.Commands()
		}
		res.Episodes = append(res.Episodes, ep)
		switch {
		case a.Result.Scored():
			res.Scored++
			if a.Result.Passed() {
				res.Passed++
			}
		default:
			res.Failed = append(res.Failed, tasks[i].path+": "+string(a.Result.Outcome))
		}
	}
	sort.Strings(res.Failed)
	if res.Scored > 0 {
		res.PassRate = float64(res.Passed) / float64(res.Scored)
	}
	o.Logger.Info("held-out evaluation", "file", file, "step", step, "pass_rate", res.PassRate, "scored", res.Scored, "tasks", res.Tasks)
	return appendJSONL(filepath.Join(o.RunDir, file), res)
}

// job is one episode to play: a task and the rollout's session id (which
// seeds the built-in policy's draws).
type job struct {
	t       *trial.Task
	session string
}

// attempts plays the jobs with cfg, Workers at a time, and returns their
// attempts in job order. The error is the first cancellation.
func (o Options) attempts(ctx context.Context, cfg agent.Config, jobs []job) ([]agent.Attempt, error) {
	out := make([]agent.Attempt, len(jobs))
	p := cpool.New().WithErrors().WithFirstError().WithMaxGoroutines(o.Workers)
	for i, j := range jobs {
		p.Go(func() error {
			h := &agent.Harness{Policy: o.Policy, Config: cfg, Session: j.session}
			a, err := agent.RunAttempt(ctx, o.Runner, j.t, h, o.Labels)
			out[i] = a
			return err
		})
	}
	return out, p.Wait()
}

func checkpointName(step int) string { return fmt.Sprintf("checkpoints/step-%05d", step) }

func checkpoint(o Options, step int) error {
	dir := filepath.Join(o.RunDir, "checkpoints")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return o.Learner.Save(filepath.Join(o.RunDir, checkpointName(step)))
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

func writeState(dir string, st state) error {
	return atomicfile.WriteJSON(filepath.Join(dir, "state.json"), st)
}

// appendJSONL appends one JSON line and syncs.
func appendJSONL(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// truncateJSONL drops the lines whose "step" is above last (written by
// an interrupted step) and returns the lines kept. A torn last line is
// first set aside in NAME.torn-TIME (rundir.SetAsideTornTail); a line in
// the middle that is not a step's JSON is dropped with a warning.
func truncateJSONL(name string, last int, log *slog.Logger) ([]byte, error) {
	torn, err := rundir.SetAsideTornTail(name)
	if err != nil {
		return nil, fmt.Errorf("train: resume: %w", err)
	}
	if torn != nil {
		log.Warn("torn last line set aside (a write was interrupted)", "file", name, "bytes", torn.Bytes, "saved_as", torn.SavedAs)
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keep []byte
	n := 0
	for line := range bytes.Lines(b) {
		n++
		if !bytes.HasSuffix(line, []byte("\n")) {
			break // torn again since: another writer (the run dir lock keeps it out)
		}
		var v struct {
			Step int `json:"step"`
		}
		if err := json.Unmarshal(line, &v); err != nil {
			log.Warn("corrupt line dropped on resume", "file", name, "line", n, "bytes", len(line), "err", err)
			continue
		}
		if v.Step <= last {
			keep = append(keep, line...)
		}
	}
	return keep, atomicfile.Write(name, keep)
}

// replaySampler brings a new sampler to where it stood after step last,
// from the groups of the metrics.jsonl lines kept for the resume.
func replaySampler(s *sampler, metrics []byte, last int, tasks []task) error {
	if s.skipSolved <= 0 {
		return nil
	}
	const metricsFile = "metrics.jsonl"
	dec := json.NewDecoder(bytes.NewReader(metrics))
	for step := 1; step <= last; step++ {
		var m Metrics
		if err := dec.Decode(&m); err != nil {
			return fmt.Errorf("train: resume: %s: step %d: %w", metricsFile, step, err)
		}
		if m.Step != step {
			return fmt.Errorf("train: resume: %s: line %d is step %d", metricsFile, step, m.Step)
		}
		idx := s.next(step)
		for g, ti := range idx {
			if g < len(m.Groups) && m.Groups[g].Task != tasks[ti].path {
				return fmt.Errorf("train: resume: step %d drew %s where %s recorded %s; the task set or the seed changed", step, tasks[ti].path, metricsFile, m.Groups[g].Task)
			}
		}
		if err := s.observe(idx, m.Groups); err != nil {
			return err
		}
	}
	return nil
}

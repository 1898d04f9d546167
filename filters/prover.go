package filters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/atomicfile"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

// Defaults of the policy prover (the flags' defaults).
const (
	DefaultProveAttempts = 8 // k: attempts until the first pass
	DefaultProveReverify = 2 // verifier re-runs on the passing state
	DefaultProveReplays  = 1 // replays of the passing keystrokes into fresh sandboxes
)

// Reasons of the policy prover (besides the flaky stage's flaky_verifier
// and flaky_solution_or_environment and the trial outcomes).
const (
	// ReasonProofLost: the attempts or the replay were lost to
	// infrastructure (sandbox, model endpoint): undecided.
	ReasonProofLost = "proof_attempts_failed"
)

// Layout of the discovered-solution store: RUN_DIR/SolutionStore/<sha256
// hex of the task's task_binary>/ holds SolutionSubdir/solve.sh and
// TrajectoryFile.
const (
	SolutionStore  = "solutions"
	SolutionSubdir = "solution"
	TrajectoryFile = "trajectory.json"
)

// SolutionDirName is the store's directory name of a task: the sha256 hex
// of its task_binary blob.
func SolutionDirName(blob []byte) string {
	h := sha256.Sum256(blob)
	return hex.EncodeToString(h[:])
}

// PolicyProver is the verifier gate's positive evidence for a task without
// an oracle: a policy attempts it through the agent harness (the same
// machinery and episode sessions as the difficulty stage) until an attempt
// scores 1, at most Attempts times. The verifier then re-runs Reverify
// more times on that attempt's post-agent state (any disagreement:
// flaky_verifier), and the attempt's replies are replayed through the
// harness into Replays fresh sandboxes (agent.Replay: the same keystrokes
// and waits); a replay that does not pass is
// flaky_solution_or_environment. When every replay passes the task is
// proven, and when SolutionsDir is set the proof is stored as a discovered
// solution: <hash>/trajectory.json, and <hash>/solution/solve.sh rendered
// from the keystrokes (agent.SolveScript) once it has passed as an oracle
// in a fresh sandbox (one more run; a script that does not is not written,
// the proof stands). A trajectory stored by an earlier run is replayed
// (and re-verified) first, so a rerun pays no policy for a task proven
// before.
type PolicyProver struct {
	Runner   *trial.Runner
	Labels   map[string]string
	Policy   policy.Policy
	PolicyID string // identifies the policy's weights for the ledger
	Harness  agent.Config
	Attempts int // k; 0 = DefaultProveAttempts
	Reverify int // re-verifications of the passing state; 0 = none
	Replays  int // replays into fresh sandboxes; at least 1
	// SolutionsDir is RUN_DIR/solutions; "" stores nothing.
	SolutionsDir string
	// Log, when set, receives every task's attempts for the difficulty
	// stage to reuse.
	Log *AttemptLog
}

var _ Prover = PolicyProver{}

func (p PolicyProver) resolved() PolicyProver {
	if p.Attempts <= 0 {
		p.Attempts = DefaultProveAttempts
	}
	p.Reverify = max(p.Reverify, 0)
	p.Replays = max(p.Replays, 1)
	return p
}

// Validate checks the configuration.
func (p PolicyProver) Validate() error {
	if p.Policy == nil {
		return errors.New("the policy prover needs a policy")
	}
	if p.Runner == nil {
		return errors.New("the policy prover needs a sandbox runner")
	}
	return nil
}

// Fingerprint implements Prover.
func (p PolicyProver) Fingerprint() string {
	p = p.resolved()
	return fmt.Sprintf("prover/v1 %s k=%d reverify=%d replays=%d", attemptSettings(p.PolicyID, p.Harness), p.Attempts, p.Reverify, p.Replays) +
		p.Runner.SettingsKey()
}

// attemptSettings names what decides a policy attempt's distribution: the
// policy's weights and the harness settings the difficulty stage's
// fingerprint also names.
func attemptSettings(policyID string, h agent.Config) string {
	var seed int64
	if h.Sampling.Seed != nil {
		seed = *h.Sampling.Seed
	}
	return fmt.Sprintf("policy=%s T=%g seed=%d turns=%d ctx=%d", policyID, h.Sampling.Temperature, seed, h.MaxTurns, h.ContextTokens)
}

// attemptSession is the harness session of attempt i on a task, shared
// with the difficulty stage so both draw the same episodes.
func attemptSession(path string, i int) string { return fmt.Sprintf("%s#%d", path, i) }

// Prove implements Prover.
func (p PolicyProver) Prove(ctx context.Context, it *pipeline.Item, t *trial.Task) (PolicyProof, error) {
	proof, err := p.prove(ctx, it, t)
	if proof.Detail == "" {
		proof.Detail = proof.Verdict.Detail
	}
	return proof, err
}

func (p PolicyProver) prove(ctx context.Context, it *pipeline.Item, t *trial.Task) (PolicyProof, error) {
	p = p.resolved()
	var proof PolicyProof
	var passing []trial.Result
	var source string // who passed: an attempt, or a stored trajectory's replay
	var notes []string
	name := p.Policy.Name()

	// A trajectory an earlier run proved is replayed instead of paying
	// the policy again (when its solve.sh was stored, the flaky stage
	// uses that and does not ask).
	stored, err := p.storedTrajectory(it)
	if err != nil {
		notes = append(notes, err.Error())
	}
	if stored != nil {
		h := &agent.Harness{Policy: agent.Replay{Trajectory: stored}, Config: agent.ReplayConfig(p.Harness, stored),
			Session: t.Path + "#stored"}
		res, err := p.verifiedSession(ctx, t, h)
		if err != nil {
			return proof, err
		}
		proof.Runs = append(proof.Runs, res...)
		if res[0].Passed() {
			passing, source = res, fmt.Sprintf("the replay of the trajectory %s stored in an earlier run", stored.Policy)
		} else {
			notes = append(notes, "the replay of the stored trajectory gave "+resultText(res[0])+"; the policy attempted afresh")
		}
	}

	var infra int
	var lastInfra string
	first := len(proof.Runs) // where the policy's attempts start
	for i := 0; i < p.Attempts && passing == nil; i++ {
		h := &agent.Harness{Policy: p.Policy, Config: p.Harness, Session: attemptSession(t.Path, i)}
		res, err := p.verifiedSession(ctx, t, h)
		if err != nil {
			return proof, err
		}
		proof.Runs = append(proof.Runs, res...)
		proof.Attempts++
		r := res[0]
		switch {
		case r.Infra():
			infra++
			lastInfra = fmt.Sprintf("%s: %s", r.Outcome, r.Detail)
		case r.Scored():
			proof.Scored++
			if r.Passed() {
				proof.Passes++
				passing, source = res, fmt.Sprintf("attempt %d of %d (%s)", i+1, p.Attempts, name)
			}
		default: // the task itself is broken (build, verifier, reward file)
			proof.Verdict = pipeline.DropOutcome(string(r.Outcome), fmt.Sprintf("%s (attempt %d of %s)", r.Detail, i+1, name))
			p.log(it, proof.Runs[first:])
			return proof, nil
		}
	}
	p.log(it, proof.Runs[first:])
	if passing == nil {
		tally := fmt.Sprintf("%d of %d attempts of %s scored, %d passed, %d lost to infrastructure", proof.Scored, proof.Attempts, name, proof.Passes, infra)
		proof.Detail = withNotes("no attempt passed: "+tally, notes)
		if proof.Scored == 0 || (proof.Scored < (proof.Attempts+1)/2 && infra > 0) {
			proof.Verdict = pipeline.ErrorOutcome(ReasonProofLost, withNotes(fmt.Sprintf("%s; last: %s", tally, lastInfra), notes))
		}
		return proof, nil
	}
	for j, r := range passing[1:] {
		if !sameReward(passing[0], r) {
			proof.Verdict = pipeline.DropOutcome(ReasonFlakyVerifier, fmt.Sprintf(
				"%s passed, but re-verification %d of the same state gave %s", source, j+1, resultText(r)))
			return proof, nil
		}
	}
	if len(passing) != 1+p.Reverify { // cannot happen: the session stops only at a disagreement
		return proof, fmt.Errorf("%s: %d re-verifications ran, want %d", source, len(passing)-1, p.Reverify)
	}
	traj, _ := passing[0].Trajectory.(*agent.Trajectory)
	if stored != nil && proof.Attempts == 0 {
		traj = stored // what the replay typed, with the policy's own record
	}
	if traj == nil {
		proof.Verdict = pipeline.ErrorOutcome(ReasonProofLost, source+" passed but left no trajectory to replay")
		return proof, nil
	}
	for j := 0; j < p.Replays; j++ {
		h := &agent.Harness{Policy: agent.Replay{Trajectory: traj}, Config: agent.ReplayConfig(p.Harness, traj),
			Session: fmt.Sprintf("%s#replay%d", t.Path, j)}
		res, err := p.Runner.Run(ctx, t, trial.Options{Actor: h, Repeats: 1, Labels: p.Labels})
		if err != nil {
			return proof, err
		}
		proof.Runs = append(proof.Runs, res...)
		r := res[0]
		switch {
		case r.Infra():
			proof.Verdict = pipeline.ErrorOutcome(ReasonProofLost, fmt.Sprintf("%s passed; its replay %d was lost to infrastructure: %s", source, j+1, resultText(r)))
			return proof, nil
		case !r.Passed():
			proof.Verdict = pipeline.DropOutcome(ReasonFlakySolutionOrEnv, fmt.Sprintf(
				"%s passed (re-verified %d times), but replaying its %d commands in a fresh sandbox gave %s",
				source, p.Reverify, len(traj.Commands()), resultText(r)))
			return proof, nil
		}
	}
	proof.Solved = true
	proof.Detail = fmt.Sprintf("%s passed; %d re-verifications agreed; %d replays reproduced the reward", source, p.Reverify, p.Replays)
	if p.SolutionsDir != "" {
		note, err := p.store(ctx, it, t, traj, &proof)
		if err != nil && ctx.Err() != nil {
			return proof, ctx.Err()
		}
		if err != nil {
			note = "the discovered solution was not stored: " + err.Error()
		}
		notes = append(notes, note)
	}
	proof.Detail = withNotes(proof.Detail, notes)
	return proof, nil
}

// verifiedSession plays h on t in a fresh sandbox and verifies the
// post-agent state once, then, only if that passed, Reverify more times
// until the first disagreement. A session that did not score (lost to
// infrastructure, or a task defect) is one result.
func (p PolicyProver) verifiedSession(ctx context.Context, t *trial.Task, h *agent.Harness) ([]trial.Result, error) {
	res, err := p.Runner.Run(ctx, t, trial.Options{Actor: h, Repeats: 1 + p.Reverify, Labels: p.Labels,
		StopOnDisagreement: true, StopWhen: func(r trial.Result) bool { return !r.Passed() }})
	if err != nil {
		return nil, err
	}
	if !res[0].Scored() { // filled with copies of its one outcome
		res = res[:1]
	}
	return res, nil
}

// storedTrajectory reads the trajectory an earlier run stored for the
// task; nil when there is none.
func (p PolicyProver) storedTrajectory(it *pipeline.Item) (*agent.Trajectory, error) {
	if p.SolutionsDir == "" || it == nil || len(it.Record.Blob) == 0 {
		return nil, nil
	}
	name := filepath.Join(p.SolutionsDir, SolutionDirName(it.Record.Blob), TrajectoryFile)
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var traj agent.Trajectory
	if err == nil {
		err = json.Unmarshal(data, &traj)
	}
	if err == nil && len(traj.Turns) == 0 {
		err = errors.New("it has no turns")
	}
	if err != nil {
		return nil, fmt.Errorf("stored trajectory %s not used: %v", name, err)
	}
	return &traj, nil
}

func withNotes(s string, notes []string) string {
	for _, n := range notes {
		s += "; " + n
	}
	return s
}

// log records the attempts for the difficulty stage.
func (p PolicyProver) log(it *pipeline.Item, attempts []trial.Result) {
	if p.Log == nil || it == nil || it.Task == nil {
		return
	}
	p.Log.put(it.Task.Hash, attemptSettings(p.PolicyID, p.Harness)+p.Runner.SettingsKey(), attemptRuns(attempts))
}

// attemptRuns keeps the first result of every session (a policy attempt;
// the re-verifications are not attempts).
func attemptRuns(rs []trial.Result) []trial.Result {
	var out []trial.Result
	for _, r := range rs {
		if r.Repeat == 0 {
			out = append(out, r)
		}
	}
	return out
}

// store writes the discovered solution: the trajectory, and solve.sh once
// it has passed as an oracle. It returns a note for the detail.
func (p PolicyProver) store(ctx context.Context, it *pipeline.Item, t *trial.Task, traj *agent.Trajectory, proof *PolicyProof) (string, error) {
	if it == nil || len(it.Record.Blob) == 0 {
		return "", errors.New("the task's blob is not at hand to name its store entry")
	}
	dir := filepath.Join(p.SolutionsDir, SolutionDirName(it.Record.Blob))
	if err := os.MkdirAll(filepath.Join(dir, SolutionSubdir), 0o755); err != nil {
		return "", fmt.Errorf("discovered solution: %w", err)
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, TrajectoryFile), traj); err != nil {
		return "", fmt.Errorf("discovered solution: %w", err)
	}
	script, notes := agent.SolveScript(traj, t.Info.Config.Environment.Workdir)
	if len(notes) > 0 {
		script = append(script, []byte("# Not reproduced from the terminal: "+strings.Join(notes, "; ")+"\n")...)
	}
	actor := &scriptActor{script: script}
	res, err := p.Runner.Run(ctx, t, trial.Options{Actor: actor, Repeats: 1, Labels: p.Labels})
	if err != nil {
		return "", err
	}
	proof.Runs = append(proof.Runs, res...)
	if actor.timedOut.Load() { // the oracle's timeout is a defect (solve_timeout)
		return "", fmt.Errorf("solve.sh rendered from the keystrokes exceeded the agent timeout as an oracle; only %s was written", TrajectoryFile)
	}
	if r := res[0]; !r.Passed() {
		return "", fmt.Errorf("solve.sh rendered from the keystrokes did not pass as an oracle (%s); only %s was written",
			resultText(r), TrajectoryFile)
	}
	name := filepath.Join(dir, SolutionSubdir, "solve.sh")
	if err := atomicfile.Write(name, script); err != nil {
		return "", fmt.Errorf("discovered solution: %w", err)
	}
	if err := os.Chmod(name, 0o755); err != nil {
		return "", fmt.Errorf("discovered solution: %w", err)
	}
	proof.Solution = dir
	note := "solve.sh passed as an oracle and was stored in " + dir
	if len(notes) > 0 {
		note += " (not reproduced from the terminal: " + strings.Join(notes, "; ") + ")"
	}
	return note, nil
}

// scriptActor runs a discovered solve.sh the way the oracle runs a task's
// own: copied to /solution, run as the agent user under the agent timeout,
// output in /logs/agent/oracle.txt.
type scriptActor struct {
	script   []byte
	timedOut atomic.Bool // in the last Act
}

func (*scriptActor) Name() string { return "discovered-solution" }

func (a *scriptActor) Act(ctx context.Context, sb sandbox.Sandbox, t *trial.Task) (trial.ActReport, error) {
	cfg := t.Info.Config
	if err := sb.Upload(ctx, "/solution", []bundle.Entry{{Name: "solve.sh", Kind: bundle.KindFile, Mode: 0o755, Data: a.script}}); err != nil {
		return trial.ActReport{}, err
	}
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "chmod -R a+rX /solution", User: "root", Timeout: time.Minute}); err != nil {
		return trial.ActReport{}, err
	}
	env := map[string]string{"DEBIAN_FRONTEND": "noninteractive"}
	for k, v := range cfg.Solution.Env {
		env[k] = v
	}
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "/solution/solve.sh > /logs/agent/oracle.txt 2>&1", User: cfg.Agent.User, Env: env,
		Timeout: time.Duration(cfg.Agent.TimeoutSec * float64(time.Second))})
	if err != nil {
		return trial.ActReport{}, err
	}
	code := res.ExitCode
	a.timedOut.Store(res.TimedOut)
	return trial.ActReport{Exit: &code, TimedOut: res.TimedOut}, nil
}

func sameReward(a, b trial.Result) bool {
	if a.Outcome != b.Outcome {
		return false
	}
	if a.Reward == nil || b.Reward == nil {
		return a.Reward == b.Reward
	}
	return *a.Reward == *b.Reward
}

// resultText is a result in a few words: "scored (reward 0)", with its
// detail when it has one.
func resultText(r trial.Result) string {
	s := string(r.Outcome)
	if r.Reward != nil {
		s += fmt.Sprintf(" (reward %g)", *r.Reward)
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

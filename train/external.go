package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/otcurate/otcurate/atomicfile"
)

// ExperienceRow is one turn of one rollout, as written for an external
// learner: RUN_DIR/learner/experience/step-NNNNN.parquet for SkyRL/TRL
// users, and the same rows as JSON Lines (step-NNNNN.jsonl, the json tags
// below) for learners on machines without a parquet reader. The schema is
// documented in integrations/learner/README.md.
type ExperienceRow struct {
	Step              int32     `parquet:"step" json:"step"`
	Task              string    `parquet:"task" json:"task"`
	Group             int32     `parquet:"group" json:"group"`   // task index within the step: the RLOO group
	Sample            int32     `parquet:"sample" json:"sample"` // attempt within the group
	Turn              int32     `parquet:"turn" json:"turn"`
	PromptTokenIDs    []int32   `parquet:"prompt_token_ids,list" json:"prompt_token_ids"`
	ResponseTokenIDs  []int32   `parquet:"response_token_ids,list" json:"response_token_ids"`
	BehaviourLogprobs []float32 `parquet:"behaviour_logprobs,list" json:"behaviour_logprobs"`
	// LossMask is 1 when the turn takes part in the loss: the sample is in
	// the baseline and its advantage is not 0 (zero-variance and too-small
	// groups would only dilute a token-mean loss).
	LossMask       int8    `parquet:"loss_mask" json:"loss_mask"`
	Advantage      float64 `parquet:"advantage" json:"advantage"`
	Reward         float64 `parquet:"reward" json:"reward"`
	Included       bool    `parquet:"included" json:"included"`
	Exclusion      string  `parquet:"exclusion" json:"exclusion"`
	PolicyVersion  string  `parquet:"policy_version" json:"policy_version"`
	PromptMessages string  `parquet:"prompt_messages" json:"prompt_messages"` // JSON [{role, content}] before this turn (for re-tokenising learners)
	ResponseText   string  `parquet:"response_text" json:"response_text"`
}

// PublishedVersion is what the learner writes to
// RUN_DIR/learner/policy/version.json after training on a step.
type PublishedVersion struct {
	Step     int    `json:"step"`                // the experience step it learnt from
	Model    string `json:"model"`               // served model name to sample from next
	LoraName string `json:"lora_name,omitempty"` // when set, loaded with /v1/load_lora_adapter first
	LoraPath string `json:"lora_path,omitempty"`
}

// ModelSwitcher is the part of a served policy the external learner
// steers (policy/openai.Client implements it).
type ModelSwitcher interface {
	SetModel(name string)
	LoadLoRA(ctx context.Context, name, path string) error
}

// External is the learner for served models: each step's experience goes
// to a parquet file plus a ".ready" marker; a learner process (SkyRL,
// TRL, verl: see integrations/learner) trains on it and publishes the next
// version; rollouts wait for it and then sample from it.
type External struct {
	Dir     string // the learner directory
	Policy  ModelSwitcher
	Model   string        // the served model name at the start
	Timeout time.Duration // how long to wait for a version; default 2 h
	Poll    time.Duration // default 1 s

	current PublishedVersion
	checked bool // the replies of a step were found to carry token ids
}

var _ Learner = (*External)(nil)

// Version is the served model name rollouts use.
func (e *External) Version() string {
	if e.current.Model == "" {
		return e.Model
	}
	return e.current.Model
}

// Update writes the experience and waits for the learner's next version.
func (e *External) Update(ctx context.Context, step int, samples []Sample) (UpdateStats, error) {
	var st UpdateStats
	dir := filepath.Join(e.Dir, "experience")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	name := filepath.Join(dir, fmt.Sprintf("step-%05d", step))
	rows := experienceRows(step, samples, e.Version())
	if !e.checked { // the first step this process writes
		if err := checkTokenIDs(rows); err != nil {
			return st, fmt.Errorf("step %d: %w", step, err)
		}
		e.checked = true
	}
	if err := writeExperience(name+".parquet", rows); err != nil {
		return st, err
	}
	if err := writeExperienceJSONL(name+".jsonl", rows); err != nil {
		return st, err
	}
	ready, _ := json.Marshal(map[string]any{"step": step, "rows": len(rows), "file": filepath.Base(name) + ".parquet",
		"jsonl": filepath.Base(name) + ".jsonl", "policy_version": e.Version()})
	if err := atomicfile.Write(name+".ready", ready); err != nil {
		return st, err
	}
	v, err := e.wait(ctx, step)
	if err != nil {
		return st, err
	}
	if err := e.use(ctx, v); err != nil {
		return st, err
	}
	st.VersionLag = step - v.Step
	return st, nil
}

// use makes v the served policy: its adapter loaded (when it has one),
// its model name in the requests.
func (e *External) use(ctx context.Context, v PublishedVersion) error {
	if v.LoraPath != "" {
		lora := v.LoraName
		if lora == "" {
			lora = v.Model
		}
		if err := e.Policy.LoadLoRA(ctx, lora, v.LoraPath); err != nil {
			return fmt.Errorf("loading the learner's adapter %s: %w", v.LoraPath, err)
		}
	}
	if v.Model != "" {
		e.Policy.SetModel(v.Model)
	}
	e.current = v
	return nil
}

// wait polls version.json until it covers step.
func (e *External) wait(ctx context.Context, step int) (PublishedVersion, error) {
	timeout, poll := e.Timeout, e.Poll
	if timeout <= 0 {
		timeout = 2 * time.Hour
	}
	if poll <= 0 {
		poll = time.Second
	}
	deadline := time.Now().Add(timeout)
	path := filepath.Join(e.Dir, "policy", "version.json")
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			var v PublishedVersion
			if err := json.Unmarshal(b, &v); err == nil && v.Step >= step && v.Model != "" {
				return v, nil
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return PublishedVersion{}, err
		}
		if time.Now().After(deadline) {
			return PublishedVersion{}, fmt.Errorf("no policy version for step %d in %s after %s: is the learner running?", step, path, timeout)
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
			return PublishedVersion{}, ctx.Err()
		}
	}
}

// Save records the version in use.
func (e *External) Save(path string) error {
	return atomicfile.WriteJSON(path+".json", e.current)
}

// Restore switches back to a saved version.
func (e *External) Restore(path string) error {
	b, err := os.ReadFile(path + ".json")
	if err != nil {
		return err
	}
	var v PublishedVersion
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Model == "" { // the checkpoint of step 0: the starting model
		e.current = v
		return nil
	}
	return e.use(context.Background(), v)
}

func experienceRows(step int, samples []Sample, version string) []ExperienceRow {
	var rows []ExperienceRow
	for _, s := range samples {
		tr := s.Attempt.Trajectory
		if tr == nil {
			continue
		}
		for i, turn := range tr.Turns {
			at := 2*i + 1
			if at > len(tr.Messages) {
				break
			}
			prompt, _ := json.Marshal(tr.Messages[:at])
			row := ExperienceRow{Step: int32(step), Task: s.Task, Group: int32(s.Group), Sample: int32(s.Index), Turn: int32(i),
				PromptTokenIDs: ints32(turn.Completion.PromptTokenIDs), ResponseTokenIDs: ints32(turn.Completion.TokenIDs),
				BehaviourLogprobs: floats32(turn.Completion.Logprobs), Advantage: s.Advantage, Reward: s.Reward,
				Included: s.Included, Exclusion: s.Exclusion, PolicyVersion: version,
				PromptMessages: string(prompt), ResponseText: turn.Completion.Content}
			if s.Included && s.Advantage != 0 {
				row.LossMask = 1
			}
			if turn.Completion.Model != "" {
				row.PolicyVersion = turn.Completion.Model
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func writeExperience(name string, rows []ExperienceRow) error {
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := parquet.NewGenericWriter[ExperienceRow](f, parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.CreatedBy("otcurate", "0.1.0", "dev"))
	if len(rows) > 0 {
		if _, err := w.Write(rows); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// writeExperienceJSONL writes rows as JSON Lines, atomically.
func writeExperienceJSONL(name string, rows []ExperienceRow) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("experience row %d: %w", i, err)
		}
	}
	return atomicfile.Write(name, b.Bytes())
}

// ErrNoTokenIDs is returned by External.Update at the first step when the
// served model returned replies without token ids or behaviour
// log-probabilities: a learner could not compute its loss from them.
var ErrNoTokenIDs = errors.New("the policy server returned no token ids or logprobs")

// checkTokenIDs fails when a reply the model gave carries no token ids, or
// logprobs not aligned with them: said at the first step, not discovered
// by the learner (or never, when it silently skips such rows).
func checkTokenIDs(rows []ExperienceRow) error {
	for _, r := range rows {
		if r.ResponseText == "" && len(r.ResponseTokenIDs) == 0 {
			continue // an empty reply: nothing to learn either way
		}
		if len(r.ResponseTokenIDs) == 0 || len(r.PromptTokenIDs) == 0 {
			return fmt.Errorf("%w: task %s sample %d turn %d has %d prompt and %d response token ids "+
				"(vLLM returns them with return_token_ids; the server must support it)",
				ErrNoTokenIDs, r.Task, r.Sample, r.Turn, len(r.PromptTokenIDs), len(r.ResponseTokenIDs))
		}
		if len(r.BehaviourLogprobs) != len(r.ResponseTokenIDs) {
			return fmt.Errorf("%w: task %s sample %d turn %d has %d logprobs for %d response tokens",
				ErrNoTokenIDs, r.Task, r.Sample, r.Turn, len(r.BehaviourLogprobs), len(r.ResponseTokenIDs))
		}
	}
	return nil
}

func ints32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

func floats32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}

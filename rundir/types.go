package rundir

import "time"

// Run-directory file names: the contract users script against.
const (
	DecisionsFile = "decisions.jsonl"
	SummaryFile   = "summary.json"
	ManifestFile  = "tasks.parquet"
	LedgerFile    = "ledger.jsonl"
)

// Verdict is the outcome class of a decision.
type Verdict string

// Verdicts. Error means the stage could not decide (an infrastructure
// problem, never a task defect); the task is not kept.
const (
	Keep  Verdict = "keep"
	Drop  Verdict = "drop"
	Error Verdict = "error"
)

// Decision is one line of decisions.jsonl.
type Decision struct {
	Index   int64   `json:"index"`
	Path    string  `json:"path"`
	Stage   string  `json:"stage"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	Detail  string  `json:"detail,omitempty"`
	Hash    string  `json:"hash,omitempty"`
	// Flags are findings that did not decide the verdict on their own
	// (e.g. lint checks set to warn), as reason codes.
	Flags []string `json:"flags,omitempty"`
	// ScoreSeconds and ScoreRate are the stage's measurement: a duration
	// (the flaky stage's median verifier seconds) or a rate (the
	// difficulty stage's pass rate). At most one is set. On disk either is
	// `score` (see MarshalJSON); readers place it by their Layout.
	ScoreSeconds *float64 `json:"-"`
	ScoreRate    *float64 `json:"-"`
	// Evidence is what a sandbox stage spent and saw for the task.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Proof is where the verifier gate's positive evidence came from
	// (oracle, supplied, policy, none); empty for other stages.
	Proof string `json:"proof,omitempty"`
}

// Evidence is the work behind a sandbox stage's verdict on one task: the
// runs it spent and what they scored, the sandbox time they took, and the
// log excerpt that explains a drop. It makes every verdict and every cost
// figure in a report traceable to runs.
type Evidence struct {
	Runs           int     `json:"runs"`            // verifier runs (or agent attempts) spent
	Passes         int     `json:"passes"`          // runs that scored 1
	Sandboxes      int     `json:"sandboxes"`       // containers started
	SandboxSeconds float64 `json:"sandbox_seconds"` // build + start + solve + verify + teardown, summed over sandboxes
	BuildSeconds   float64 `json:"build_seconds,omitempty"`
	StartSeconds   float64 `json:"start_seconds,omitempty"`
	Teardown       float64 `json:"teardown_seconds,omitempty"`
	// VerifierSeconds is the median test.sh time of the runs.
	VerifierSeconds float64 `json:"verifier_seconds,omitempty"`
	// FromLedger is set when the outcome was served from the ledger: the
	// figures are those of the run that decided it, and cost nothing now.
	FromLedger bool `json:"from_ledger,omitempty"`
	// Log is the tail of the log behind a drop (build log, test.sh output).
	Log string `json:"log,omitempty"`
}

// Task is the per-task metadata kept for the whole run, and a row of the
// manifest. It must stay small:
// one exists per input row.
type Task struct {
	Index       int64
	Path        string
	Hash        string // bundle content hash (set by validate)
	EnvHash     string // content hash of environment/
	BlobBytes   int64
	EnvKind     string
	HasSolution bool
	Stratum     string // the task's value of the select stage's stratification key
	Alive       bool   // not dropped by any stage so far
	LastStage   string // stage that last decided the task
	Marks       []StageMark
}

// StageMark is one stage's decision on a task, kept for the whole run
// (the manifest, later stages). One exists per task and stage, so it stays
// at 64 bytes: the strings share the stage's and the reason constants'
// bytes, and what only sandbox stages measure sits behind Measure, nil for
// the static stages (a 100K-task run with six static stages held 100 MB of
// marks when every mark carried those fields).
type StageMark struct {
	Stage   string
	Verdict Verdict
	Reason  string
	Seconds float64 // time the stage spent on this task (0 for set stages)
	// Measure is the stage's measurement and evidence; nil when it has
	// none (see MarkMeasure.Empty).
	Measure *MarkMeasure
}

// MarkMeasure is what a stage measured of a task, beside its verdict.
type MarkMeasure struct {
	// ScoreSeconds and ScoreRate are the stage's measurement (see
	// Decision); the manifest's <stage>_score.
	ScoreSeconds, ScoreRate *float64
	// Runs, Passes and SandboxSeconds summarise the stage's Evidence (the
	// log excerpt stays in decisions.jsonl).
	Runs, Passes   int32
	SandboxSeconds float64
	FromLedger     bool
	// Proof: see Decision; the manifest's `proof` column.
	Proof string
}

// Empty reports whether the measure holds nothing (a mark needs none).
func (m *MarkMeasure) Empty() bool { return m == nil || *m == MarkMeasure{} }

// SetMeasure gives the mark a copy of ms, or none when ms is empty: only
// the marks that carry a measure cost an allocation (one per task and
// stage otherwise, on the engine's hot path).
func (m *StageMark) SetMeasure(ms MarkMeasure) {
	if ms.Empty() {
		m.Measure = nil
		return
	}
	p := new(MarkMeasure)
	*p = ms
	m.Measure = p
}

// Proof is the mark's proof kind ("" when the stage records none).
func (m StageMark) Proof() string {
	if m.Measure == nil {
		return ""
	}
	return m.Measure.Proof
}

// Measured is the mark's measure, the zero one when it has none.
func (m StageMark) Measured() MarkMeasure {
	if m.Measure == nil {
		return MarkMeasure{}
	}
	return *m.Measure
}

// StageSummary is one stage's line of the funnel.
type StageSummary struct {
	Stage           string           `json:"stage"`
	In              int64            `json:"in"`
	Kept            int64            `json:"kept"`
	Dropped         int64            `json:"dropped"`
	DroppedByReason map[string]int64 `json:"dropped_by_reason"`
	Errors          int64            `json:"errors"`
	ErrorsByReason  map[string]int64 `json:"errors_by_reason"`
	FlaggedByReason map[string]int64 `json:"flagged_by_reason"` // findings that did not decide alone (warnings)
	Seconds         float64          `json:"seconds"`           // wall time of the stage (its share of a streaming pass)
	BusySeconds     float64          `json:"busy_seconds"`      // summed per-task processing time
	// Runs and SandboxSeconds are what sandbox stages spent in this run
	// (outcomes served from the ledger cost nothing and are counted in
	// FromLedger instead).
	Runs           int64   `json:"runs,omitempty"`
	SandboxSeconds float64 `json:"sandbox_seconds,omitempty"`
	FromLedger     int64   `json:"from_ledger,omitempty"`
	// Proofs splits the decisions that carry a proof (the verifier gate's:
	// oracle, supplied, policy, none) by proof kind; nil for other stages.
	// Decisions with an error verdict carry no proof and are not in it.
	Proofs map[string]*ProofStat `json:"proofs,omitempty"`
}

// ProofStat is what a stage decided and spent on the tasks whose verdict
// stood on one kind of proof: the counts of decisions.jsonl lines of the
// stage with that "proof", and the sum of their evidence.
type ProofStat struct {
	Kept    int64 `json:"kept"`
	Dropped int64 `json:"dropped"`
	// Runs and SandboxSeconds are this run's spend (decisions served from
	// the ledger cost nothing now and are counted in FromLedger).
	Runs           int64   `json:"runs"`
	SandboxSeconds float64 `json:"sandbox_seconds"`
	FromLedger     int64   `json:"from_ledger,omitempty"`
}

// AddProof counts one decision of the stage that carries a proof: its
// verdict and, unless it came from the ledger, its evidence's spend.
func (s *StageSummary) AddProof(proof string, v Verdict, ev *Evidence) {
	if proof == "" || v == Error {
		return
	}
	if s.Proofs == nil {
		s.Proofs = map[string]*ProofStat{}
	}
	p := s.Proofs[proof]
	if p == nil {
		p = &ProofStat{}
		s.Proofs[proof] = p
	}
	if v == Keep {
		p.Kept++
	} else {
		p.Dropped++
	}
	switch {
	case ev == nil:
	case ev.FromLedger:
		p.FromLedger++
	default:
		p.Runs += int64(ev.Runs)
		p.SandboxSeconds += ev.SandboxSeconds
	}
}

// add sums another run's line of the same proof kind into p.
func (p *ProofStat) add(src *ProofStat) {
	p.Kept += src.Kept
	p.Dropped += src.Dropped
	p.Runs += src.Runs
	p.SandboxSeconds += src.SandboxSeconds
	p.FromLedger += src.FromLedger
}

// NewStageSummary is an empty funnel line.
func NewStageSummary(stage string) *StageSummary {
	return &StageSummary{Stage: stage, DroppedByReason: map[string]int64{}, ErrorsByReason: map[string]int64{},
		FlaggedByReason: map[string]int64{}}
}

// Summary is summary.json: the funnel of one run.
type Summary struct {
	Tool        string    `json:"tool"`
	Pool        string    `json:"pool"`
	Stages      []string  `json:"stages"`
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at"`
	WallSeconds float64   `json:"wall_seconds"`
	Interrupted bool      `json:"interrupted"`
	TasksIn     int64     `json:"tasks_in"`
	TasksKept   int64     `json:"tasks_kept"`
	Errors      int64     `json:"errors"`
	Output      []string  `json:"output"`
	LedgerHits  int64     `json:"ledger_hits"` // sandbox-stage outcomes reused from an earlier run
	// Shard is "I/N" for a sharded run; Merged lists the run directories
	// a merged run was combined from.
	Shard  string   `json:"shard,omitempty"`
	Merged []string `json:"merged,omitempty"`
	// PoolRows is the number of rows of the whole pool (TasksIn counts
	// only the shard's).
	PoolRows int64           `json:"pool_rows,omitempty"`
	Funnel   []*StageSummary `json:"funnel"`
	// KeptByProof splits the output's tasks (TasksKept) by the proof their
	// verifier gate decision stood on (see StageSummary.Proofs); nil when
	// no stage of the run records a proof. A task is counted under the
	// proof of its gate decision in decisions.jsonl.
	KeptByProof map[string]int64 `json:"kept_by_proof,omitempty"`
}

// KeptByProof counts kept tasks by the proof of their mark of the stage
// that records one; nil when none of them has such a mark.
func KeptByProof(kept []*Task) map[string]int64 {
	var out map[string]int64
	for _, t := range kept {
		for _, m := range t.Marks {
			if m.Proof() == "" {
				continue
			}
			if out == nil {
				out = map[string]int64{}
			}
			out[m.Proof()]++
			break
		}
	}
	return out
}

// SandboxSpend sums what the sandbox stages spent in this run (runs and
// sandbox-seconds) and how many of their verdicts came from the ledger.
func (s *Summary) SandboxSpend() (runs int64, seconds float64, reused int64) {
	for _, st := range s.Funnel {
		runs, seconds, reused = runs+st.Runs, seconds+st.SandboxSeconds, reused+st.FromLedger
	}
	return runs, seconds, reused
}

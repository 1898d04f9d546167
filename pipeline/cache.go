package pipeline

import (
	"context"

	"github.com/otcurate/otcurate/rundir"
)

// Fingerprinted is implemented by stages whose outcome depends on settings
// beyond the task's content; the fingerprint is part of the ledger key, so
// a changed setting recomputes only what it affects.
type Fingerprinted interface {
	Fingerprint() string
}

// ItemFingerprinted is implemented by stages whose outcome for a task also
// depends on inputs beside the task's content and the stage's settings (a
// solution supplied next to the pool). ItemFingerprint is appended to that
// task's ledger key; "" leaves the key as it was.
type ItemFingerprinted interface {
	ItemFingerprint(it *Item) string
}

// cachedStage serves a stage's outcomes from the ledger when it has them.
// Only decided outcomes (keep, drop) are stored: errors and interruptions
// are retried on the next run.
type cachedStage struct {
	ItemStage
	ledger *rundir.Ledger
}

// Cached wraps an item stage with the ledger.
func Cached(s ItemStage, l *rundir.Ledger) ItemStage { return &cachedStage{ItemStage: s, ledger: l} }

// Expensive implements Expensive: only expensive stages are cached.
func (c *cachedStage) Expensive() {}

// Format implements Formatted: the wrapped stage's.
func (c *cachedStage) Format() rundir.StageFormat {
	if f, ok := c.ItemStage.(Formatted); ok {
		return f.Format()
	}
	return rundir.StageFormat{}
}

func (c *cachedStage) key(it *Item) string {
	fp := ""
	if f, ok := c.ItemStage.(Fingerprinted); ok {
		fp = f.Fingerprint()
	}
	key := it.Task.Hash + "|" + c.Name() + "|" + fp
	if f, ok := c.ItemStage.(ItemFingerprinted); ok {
		if ifp := f.ItemFingerprint(it); ifp != "" {
			key += "|" + ifp
		}
	}
	return key
}

// Process implements ItemStage.
func (c *cachedStage) Process(ctx context.Context, it *Item) Outcome {
	key := c.key(it)
	if e, ok := c.ledger.Get(key, c.Format().Score); ok {
		o := Outcome{Verdict: e.Verdict, Reason: e.Reason, Detail: e.Detail, Flags: e.Flags,
			ScoreSeconds: e.ScoreSeconds, ScoreRate: e.ScoreRate, Evidence: e.Evidence, Proof: e.Proof}
		if o.Detail != "" {
			o.Detail += " "
		}
		o.Detail += "(from the ledger)"
		if o.Evidence != nil {
			ev := *o.Evidence
			ev.FromLedger = true
			o.Evidence = &ev
		}
		return o
	}
	o := c.ItemStage.Process(ctx, it)
	if (o.Verdict == Keep || o.Verdict == Drop) && ctx.Err() == nil {
		e := rundir.Entry{Verdict: o.Verdict, Reason: o.Reason, Detail: o.Detail, Flags: o.Flags,
			ScoreSeconds: o.ScoreSeconds, ScoreRate: o.ScoreRate, Evidence: o.Evidence, Proof: o.Proof}
		if err := c.ledger.Put(key, e); err != nil {
			return ErrorOutcome("ledger_write_failed", err.Error())
		}
	}
	return o
}

// Expensive marks item stages whose outcomes go through the ledger (they
// run sandboxes).
type Expensive interface {
	Expensive()
}

package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// LedgerFile is the run directory's ledger of expensive stage results.
const LedgerFile = "ledger.jsonl"

// Ledger remembers the outcomes of expensive stages (the ones that run
// sandboxes), keyed by task content hash, stage and the stage settings that
// matter, so a re-run of the same pool resumes instead of redoing work.
// Every entry is appended and synced the moment it is decided: killing the
// process at any instant loses only the tasks in flight. It is an
// append-only JSON-lines file; a torn last line (a crash mid-write) is
// ignored on load.
type Ledger struct {
	mu      sync.Mutex
	f       *os.File
	entries map[string]Outcome
	hits    int64
}

type ledgerEntry struct {
	Key      string    `json:"key"`
	Verdict  Verdict   `json:"verdict"`
	Reason   string    `json:"reason"`
	Detail   string    `json:"detail,omitempty"`
	Flags    []string  `json:"flags,omitempty"`
	Score    *float64  `json:"score,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
	At       time.Time `json:"at"`
}

// OpenLedger loads (or creates) a ledger file.
func OpenLedger(name string) (*Ledger, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l := &Ledger{f: f, entries: map[string]Outcome{}}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var e ledgerEntry
			if json.Unmarshal(line, &e) == nil && e.Key != "" {
				l.entries[e.Key] = Outcome{Verdict: e.Verdict, Reason: e.Reason, Detail: e.Detail, Flags: e.Flags, Score: e.Score, Evidence: e.Evidence}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("ledger %s: %w", name, err)
		}
	}
	return l, nil
}

// Len is the number of remembered outcomes.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Hits is how many outcomes were served from the ledger.
func (l *Ledger) Hits() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hits
}

func (l *Ledger) get(key string) (Outcome, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.entries[key]
	if ok {
		l.hits++
	}
	return o, ok
}

func (l *Ledger) put(key string, o Outcome) error {
	data, err := json.Marshal(ledgerEntry{Key: key, Verdict: o.Verdict, Reason: o.Reason, Detail: o.Detail, Flags: o.Flags, Score: o.Score, Evidence: o.Evidence, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	l.entries[key] = o
	return nil
}

// Close closes the ledger file.
func (l *Ledger) Close() error { return l.f.Close() }

// Fingerprinted is implemented by stages whose outcome depends on settings
// beyond the task's content; the fingerprint is part of the ledger key, so
// a changed setting recomputes only what it affects.
type Fingerprinted interface {
	Fingerprint() string
}

// cachedStage serves a stage's outcomes from the ledger when it has them.
// Only decided outcomes (keep, drop) are stored: errors and interruptions
// are retried on the next run.
type cachedStage struct {
	ItemStage
	ledger *Ledger
}

// Cached wraps an item stage with the ledger.
func Cached(s ItemStage, l *Ledger) ItemStage { return &cachedStage{ItemStage: s, ledger: l} }

// Expensive implements Expensive: only expensive stages are cached.
func (c *cachedStage) Expensive() {}

func (c *cachedStage) key(it *Item) string {
	fp := ""
	if f, ok := c.ItemStage.(Fingerprinted); ok {
		fp = f.Fingerprint()
	}
	return it.Task.Hash + "|" + c.Name() + "|" + fp
}

// Process implements ItemStage.
func (c *cachedStage) Process(ctx context.Context, it *Item) Outcome {
	key := c.key(it)
	if o, ok := c.ledger.get(key); ok {
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
		if err := c.ledger.put(key, o); err != nil {
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

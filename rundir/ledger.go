package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

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
	entries map[string]Entry
	hits    int64
}

// Entry is a decided outcome the ledger remembers.
type Entry struct {
	Verdict  Verdict
	Reason   string
	Detail   string
	Flags    []string
	Score    *float64
	Evidence *Evidence
}

// ledgerEntry is a line of ledger.jsonl.
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
	l := &Ledger{f: f, entries: map[string]Entry{}}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var e ledgerEntry
			if json.Unmarshal(line, &e) == nil && e.Key != "" {
				l.entries[e.Key] = Entry{Verdict: e.Verdict, Reason: e.Reason, Detail: e.Detail, Flags: e.Flags, Score: e.Score, Evidence: e.Evidence}
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

// Get returns the entry remembered under key, counting a hit.
func (l *Ledger) Get(key string) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.entries[key]
	if ok {
		l.hits++
	}
	return o, ok
}

// Put appends an entry under key and syncs the file.
func (l *Ledger) Put(key string, o Entry) error {
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

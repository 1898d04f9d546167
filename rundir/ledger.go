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
	entries map[string]ledgerEntry
	hits    int64
}

// Entry is a decided outcome the ledger remembers.
type Entry struct {
	Verdict Verdict
	Reason  string
	Detail  string
	Flags   []string
	// ScoreSeconds and ScoreRate: see Decision. The ledger holds one
	// `score`; Get places it by the stage's score kind.
	ScoreSeconds, ScoreRate *float64
	Evidence                *Evidence
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
	l := &Ledger{f: f, entries: map[string]ledgerEntry{}}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var e ledgerEntry
			if json.Unmarshal(line, &e) == nil && e.Key != "" {
				l.entries[e.Key] = e
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

// Get returns the entry remembered under key, counting a hit; kind is
// what the stage's score measures. An entry whose score does not fit the
// kind is not served.
func (l *Ledger) Get(key string, kind ScoreKind) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[key]
	if !ok {
		return Entry{}, false
	}
	sec, rate, err := kind.Split(e.Score)
	if err != nil {
		return Entry{}, false
	}
	l.hits++
	return Entry{Verdict: e.Verdict, Reason: e.Reason, Detail: e.Detail, Flags: e.Flags, ScoreSeconds: sec, ScoreRate: rate, Evidence: e.Evidence}, true
}

// Put appends an entry under key and syncs the file.
func (l *Ledger) Put(key string, o Entry) error {
	e := ledgerEntry{Key: key, Verdict: o.Verdict, Reason: o.Reason, Detail: o.Detail, Flags: o.Flags,
		Score: JoinScore(o.ScoreSeconds, o.ScoreRate), Evidence: o.Evidence, At: time.Now().UTC()}
	data, err := json.Marshal(e)
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
	l.entries[key] = e
	return nil
}

// Close closes the ledger file.
func (l *Ledger) Close() error { return l.f.Close() }

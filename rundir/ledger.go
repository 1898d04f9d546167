package rundir

import (
	"bufio"
	"bytes"
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
// append-only JSON-lines file. A torn last line (a crash mid-write) is set
// aside on open, never appended onto (see SetAsideTornTail); a line in the
// middle that is not an entry is skipped and counted (Unreadable).
type Ledger struct {
	mu         sync.Mutex
	f          *os.File
	size       int64 // bytes of whole lines: where the next entry starts
	broken     error // set when a failed append could not be undone
	entries    map[string]ledgerEntry
	hits       int64
	torn       *TornTail
	unreadable int
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
	Proof                   string
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
	Proof    string    `json:"proof,omitempty"`
	At       time.Time `json:"at"`
}

// OpenLedger loads (or creates) a ledger file. A torn last line is set
// aside first (Torn says so); lines that are not entries are skipped
// (Unreadable), except that an entry appended onto a torn line by an older
// otcurate is recovered from the end of that line.
func OpenLedger(name string) (*Ledger, error) {
	torn, err := SetAsideTornTail(name)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l := &Ledger{f: f, entries: map[string]ledgerEntry{}, torn: torn}
	r := bufio.NewReaderSize(f, 256<<10)
	for {
		line, err := r.ReadBytes('\n')
		l.size += int64(len(line))
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if e, ok := parseLedgerLine(line); ok {
				l.entries[e.Key] = e
			} else if len(bytes.TrimSpace(line)) > 0 {
				l.unreadable++
			}
		}
		if errors.Is(err, io.EOF) {
			if len(line) > 0 && line[len(line)-1] != '\n' {
				// Torn again since SetAsideTornTail (another writer):
				// never append onto it.
				f.Close()
				return nil, fmt.Errorf("ledger %s: its last line is incomplete: is another otcurate writing this run directory?", name)
			}
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("ledger %s: %w", name, err)
		}
	}
	return l, nil
}

// parseLedgerLine reads a line of the ledger. A line that is not an entry
// may be a torn line an older otcurate appended a whole entry onto: the
// entry is taken from the last `{"key":` that parses.
func parseLedgerLine(line []byte) (ledgerEntry, bool) {
	var e ledgerEntry
	if json.Unmarshal(line, &e) == nil && e.Key != "" {
		return e, true
	}
	marker := []byte(`{"key":`)
	for end := len(line); ; {
		i := bytes.LastIndex(line[:end], marker)
		if i <= 0 {
			return ledgerEntry{}, false
		}
		e = ledgerEntry{}
		if json.Unmarshal(line[i:], &e) == nil && e.Key != "" {
			return e, true
		}
		end = i
	}
}

// Torn is the torn last line OpenLedger set aside, nil when there was none.
func (l *Ledger) Torn() *TornTail { return l.torn }

// Unreadable is how many lines OpenLedger skipped because they were not
// entries.
func (l *Ledger) Unreadable() int { return l.unreadable }

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
	return Entry{Verdict: e.Verdict, Reason: e.Reason, Detail: e.Detail, Flags: e.Flags, ScoreSeconds: sec, ScoreRate: rate, Evidence: e.Evidence, Proof: e.Proof}, true
}

// Put appends an entry under key and syncs the file.
func (l *Ledger) Put(key string, o Entry) error {
	e := ledgerEntry{Key: key, Verdict: o.Verdict, Reason: o.Reason, Detail: o.Detail, Flags: o.Flags,
		Score: JoinScore(o.ScoreSeconds, o.ScoreRate), Evidence: o.Evidence, Proof: o.Proof, At: time.Now().UTC()}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	n, err := l.f.Write(append(data, '\n'))
	if err != nil {
		if n > 0 {
			// A partial line (a full disk): cut it, so the next entry
			// does not land on it.
			if terr := l.f.Truncate(l.size); terr != nil {
				l.broken = fmt.Errorf("ledger: a failed append left a partial line that cannot be cut (%v): no more entries are written", terr)
			}
		}
		return fmt.Errorf("ledger: %w", err)
	}
	l.size += int64(n)
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	l.entries[key] = e
	return nil
}

// Close closes the ledger file.
func (l *Ledger) Close() error { return l.f.Close() }

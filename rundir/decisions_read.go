package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/sourcegraph/conc/stream"

	"github.com/otcurate/otcurate/internal/buflist"
)

// EachDecision streams a decisions.jsonl file, one decision at a time and
// in file order (a 100K-task run has hundreds of thousands of lines:
// reports and merges should not hold them all unless they need to). Lines
// are parsed in batches on all cores; fn runs on one goroutine at a time.
// The layout places each score (Decision.ScoreSeconds or ScoreRate); a
// nil layout reads no scores.
func EachDecision(name string, layout Layout, fn func(Decision) error) error {
	return EachDecisionWhere(name, layout, nil, fn)
}

// EachDecisionWhere is EachDecision for the lines want accepts (all when
// want is nil): a cheap test on the raw JSON line spares parsing the lines
// a reader has no use for. want must be safe for concurrent use.
func EachDecisionWhere(name string, layout Layout, want func(line []byte) bool, fn func(Decision) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	s := stream.New().WithMaxGoroutines(runtime.GOMAXPROCS(0))
	// Chunks in flight are bounded by the stream (its workers and the
	// callbacks queued behind them); the list keeps that many.
	chunks := buflist.New(2*decisionChunk, 2*runtime.GOMAXPROCS(0)+4)
	var firstErr error // set by callbacks, which run sequentially
	var readErr error
	// The file is read in chunks of whole lines; a batch's lines are
	// slices of its chunk (one allocation per chunk, not per line: the
	// build report reads every line of a 100K-task run).
	var carry []byte // a partial last line, moved to the next chunk
	n := 0           // lines handed out so far
	for readErr == nil && firstErr == nil {
		buf := chunks.Get(len(carry) + decisionChunk)
		chunk := buf
		copy(chunk, carry)
		k, err := io.ReadFull(f, chunk[len(carry):])
		chunk = chunk[:len(carry)+k]
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			readErr = io.EOF
		case err != nil:
			readErr = fmt.Errorf("%s: %w", name, err)
			continue
		}
		if readErr == nil {
			cut := bytes.LastIndexByte(chunk, '\n') + 1
			if cut == 0 && len(chunk) > 0 {
				// A line longer than a chunk: read on until its end.
				carry = chunk
				continue
			}
			chunk, carry = chunk[:cut], append(carry[:0:0], chunk[cut:]...)
		}
		var lines [][]byte
		start := n + 1
		for len(chunk) > 0 {
			line := chunk
			if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
				line, chunk = chunk[:i+1], chunk[i+1:]
			} else {
				chunk = nil
			}
			if len(bytes.TrimSpace(line)) == 0 {
				line = nil
			}
			lines = append(lines, line)
		}
		n += len(lines)
		s.Go(func() stream.Callback {
			ds := make([]Decision, len(lines))
			var perr error
			for i, line := range lines {
				if line == nil {
					continue
				}
				if want != nil && !want(line) {
					lines[i] = nil
					continue
				}
				var w decisionJSON
				jerr := json.Unmarshal(line, &w)
				if jerr == nil {
					ds[i], jerr = w.decision(layout)
				}
				if jerr != nil && line[len(line)-1] != '\n' {
					// Only the file's last line can lack its newline.
					perr = fmt.Errorf("%s line %d: torn last line (%d bytes without a newline: the run that wrote it was killed mid-write, or is still writing): %w", name, start+i, len(line), jerr)
					ds = ds[:i]
					break
				}
				if jerr != nil {
					perr = fmt.Errorf("%s line %d: %w", name, start+i, jerr)
					ds = ds[:i]
					break
				}
			}
			return func() {
				defer chunks.Put(buf) // decisions hold copies, not slices of it
				if firstErr != nil {
					return
				}
				for i, d := range ds {
					if lines[i] == nil {
						continue
					}
					if err := fn(d); err != nil {
						firstErr = err
						return
					}
				}
				firstErr = perr
			}
		})
	}
	s.Wait()
	if firstErr != nil {
		return firstErr
	}
	if !errors.Is(readErr, io.EOF) {
		return readErr
	}
	return nil
}

// decisionChunk is how much of decisions.jsonl one batch reads: about
// 1,000 lines of a validate-only run.
const decisionChunk = 256 << 10

// ReadDecisions reads a whole decisions.jsonl file (see EachDecision).
func ReadDecisions(name string, layout Layout) ([]Decision, error) {
	var out []Decision
	err := EachDecision(name, layout, func(d Decision) error { out = append(out, d); return nil })
	return out, err
}

package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/sourcegraph/conc/stream"
)

// EachDecision streams a decisions.jsonl file, one decision at a time and
// in file order (a 100K-task run has hundreds of thousands of lines:
// reports and merges should not hold them all unless they need to). Lines
// are parsed in batches on all cores; fn runs on one goroutine at a time.
func EachDecision(name string, fn func(Decision) error) error {
	return EachDecisionWhere(name, nil, fn)
}

// EachDecisionWhere is EachDecision for the lines want accepts (all when
// want is nil): a cheap test on the raw JSON line spares parsing the lines
// a reader has no use for. want must be safe for concurrent use.
func EachDecisionWhere(name string, want func(line []byte) bool, fn func(Decision) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	const batchLines = 512
	s := stream.New().WithMaxGoroutines(runtime.GOMAXPROCS(0))
	var firstErr error // set by callbacks, which run sequentially
	var readErr error
	n := 0
	for readErr == nil && firstErr == nil {
		var lines [][]byte
		start := n + 1
		for len(lines) < batchLines {
			line, err := br.ReadBytes('\n')
			n++
			if len(bytes.TrimSpace(line)) > 0 {
				lines = append(lines, line)
			} else {
				lines = append(lines, nil)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = fmt.Errorf("%s: %w", name, err)
				} else {
					readErr = io.EOF
				}
				break
			}
		}
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
				if jerr := json.Unmarshal(line, &ds[i]); jerr != nil {
					perr = fmt.Errorf("%s line %d: %w", name, start+i, jerr)
					ds = ds[:i]
					break
				}
			}
			return func() {
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

// ReadDecisions reads a whole decisions.jsonl file.
func ReadDecisions(name string) ([]Decision, error) {
	var out []Decision
	err := EachDecision(name, func(d Decision) error { out = append(out, d); return nil })
	return out, err
}

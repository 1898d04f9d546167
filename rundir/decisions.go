package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// DecisionWriter appends decisions to a JSON-lines file, flushing every few
// hundred lines so the file is useful while a run is going.
type DecisionWriter struct {
	f   *os.File
	bw  *bufio.Writer
	enc *json.Encoder
	buf []byte // appendDecisionJSON's line
	n   int
}

// CreateDecisions creates (or truncates) a decisions file.
func CreateDecisions(name string) (*DecisionWriter, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &DecisionWriter{f: f, bw: bw, enc: enc}, nil
}

// Write appends one decision.
func (s *DecisionWriter) Write(d Decision) error {
	var ok bool
	if s.buf, ok = appendDecisionJSON(s.buf[:0], &d); ok {
		if _, err := s.bw.Write(s.buf); err != nil {
			return fmt.Errorf("writing %s: %w", s.f.Name(), err)
		}
	} else if err := s.enc.Encode(d.wire()); err != nil {
		return fmt.Errorf("writing %s: %w", s.f.Name(), err)
	}
	s.n++
	if s.n%256 == 0 {
		return s.bw.Flush()
	}
	return nil
}

// Flush writes the buffered lines to the file: once flushed after the last
// decision, the file is complete for readers.
func (s *DecisionWriter) Flush() error {
	if err := s.bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", s.f.Name(), err)
	}
	return nil
}

// Close flushes, syncs and closes the file.
func (s *DecisionWriter) Close() error {
	return errors.Join(s.bw.Flush(), s.f.Sync(), s.f.Close())
}

// WriteDecisions writes a whole decisions file.
func WriteDecisions(name string, ds []Decision) error {
	s, err := CreateDecisions(name)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if err := s.Write(d); err != nil {
			s.Close()
			return err
		}
	}
	return s.Close()
}

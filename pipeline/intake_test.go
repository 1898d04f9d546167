package pipeline_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
)

// sliceSource is a pool held in memory.
type sliceSource []pool.Record

func (s sliceSource) Len() int64     { return int64(len(s)) }
func (s sliceSource) String() string { return "slice" }
func (s sliceSource) Each(ctx context.Context, skip func(int64) bool, fn func(pool.Record) error) error {
	for _, r := range s {
		if skip != nil && skip(r.Index) {
			continue
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// rawIntake is an intake that is not validate: rows are opaque bytes,
// hashed as they are; empty rows are not tasks.
type rawIntake struct{}

func (rawIntake) Name() string { return "raw" }
func (rawIntake) Process(_ context.Context, it *pipeline.Item) pipeline.Outcome {
	h := sha256.Sum256(it.Record.Blob)
	it.Task.Hash = hex.EncodeToString(h[:])
	return pipeline.KeepOutcome("hashed", "")
}
func (rawIntake) Admit(rec pool.Record, _ *pool.PathSet) (pipeline.Outcome, bool) {
	if len(rec.Blob) == 0 {
		return pipeline.DropOutcome("empty", ""), true
	}
	return pipeline.Outcome{}, false
}
func (rawIntake) Reopen(rec pool.Record, t *pipeline.Task, _ bundle.Limits) (*bundle.Bundle, *bundle.Info, error) {
	if h := sha256.Sum256(rec.Blob); hex.EncodeToString(h[:]) != t.Hash {
		return nil, nil, errors.New("changed")
	}
	return nil, nil, nil
}

// firstHalf is a set stage that keeps the first half of the survivors.
type firstHalf struct{}

func (firstHalf) Name() string { return "half" }
func (firstHalf) Decide(_ context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	outs := make([]pipeline.Outcome, len(tasks))
	for i := range tasks {
		outs[i] = pipeline.KeepOutcome("first", "")
		if i >= len(tasks)/2 {
			outs[i] = pipeline.DropOutcome("second", "")
		}
	}
	return outs, nil
}

// seesTask is an item stage after a set stage: it sees the row again,
// reopened by the intake.
type seesTask struct{}

func (seesTask) Name() string { return "sees" }
func (seesTask) Process(_ context.Context, it *pipeline.Item) pipeline.Outcome {
	if it.Task.Hash == "" || len(it.Record.Blob) == 0 {
		return pipeline.ErrorOutcome("blind", "")
	}
	return pipeline.KeepOutcome("seen", "")
}

type collect struct{ ds []pipeline.Decision }

func (c *collect) Write(d pipeline.Decision) error { c.ds = append(c.ds, d); return nil }

// TestEngineRunsAnyIntake: the engine knows no stage by name. Any Intake
// turns rows into tasks (its Admit decides rows before Process, its Reopen
// serves the passes after a set stage), and a first stage that is not an
// Intake is refused.
func TestEngineRunsAnyIntake(t *testing.T) {
	src := sliceSource{{Index: 0, Path: "a", Blob: []byte("x")}, {Index: 1, Path: "b"},
		{Index: 2, Path: "c", Blob: []byte("y")}, {Index: 3, Path: "d", Blob: []byte("z")}, {Index: 4, Path: "e", Blob: []byte("w")}}
	sink := &collect{}
	eng := &pipeline.Engine{Source: src, Stages: []pipeline.Stage{rawIntake{}, firstHalf{}, seesTask{}}, Sink: sink, Workers: 2}
	res, err := eng.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range sink.ds {
		got = append(got, d.Path+":"+d.Stage+":"+d.Reason)
	}
	want := "a:raw:hashed b:raw:empty c:raw:hashed d:raw:hashed e:raw:hashed " +
		"a:half:first c:half:first d:half:second e:half:second a:sees:seen c:sees:seen"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("decisions\n got %s\nwant %s", g, want)
	}
	if k := len(res.Kept()); k != 2 {
		t.Errorf("%d kept, want 2", k)
	}

	eng = &pipeline.Engine{Source: src, Stages: []pipeline.Stage{seesTask{}}, Sink: &collect{}}
	if _, err := eng.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "does not turn pool rows into tasks") {
		t.Errorf("a first stage that is no intake: %v", err)
	}
}

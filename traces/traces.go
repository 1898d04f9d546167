// Package traces exports SFT data (`otcurate traces`): a teacher policy
// runs over a task set through the agent harness, a few attempts per task
// in fresh sandboxes, and the trajectories the verifier rewards at least
// MinReward (solved, by default) become chat-format training rows (the
// usual `conversations` list, plus task, reward, model and episode) in a
// parquet file written atomically. Infrastructure failures and task
// defects are counted in Stats, never exported; a task defect ends that
// task's attempts.
package traces

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/sourcegraph/conc/stream"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/trial"
)

// Message is one chat message of a row.
type Message struct {
	Role    string `parquet:"role" json:"role"`
	Content string `parquet:"content" json:"content"`
}

// Row is one exported trajectory: the usual `conversations` shape
// (a list of {role, content}, starting with the user prompt and ending
// with the assistant's last reply), with the task path and the reward.
type Row struct {
	Task          string    `parquet:"task" json:"task"`
	Conversations []Message `parquet:"conversations,list" json:"conversations"`
	Reward        float64   `parquet:"reward" json:"reward"`
	Agent         string    `parquet:"agent" json:"agent"`
	Model         string    `parquet:"model" json:"model"`
	Episode       string    `parquet:"episode" json:"episode"`
	Turns         int32     `parquet:"turns" json:"turns"`
	End           string    `parquet:"end" json:"end"`
}

// Options configure an export.
type Options struct {
	Source  pool.Source
	Runner  *trial.Runner
	Policy  policy.Policy
	Harness agent.Config
	Limits  bundle.Limits
	Labels  map[string]string
	// Output is the file to write: JSON Lines (one Row per line, the json
	// tags) when its name ends in .jsonl, for trainers without a parquet
	// reader; parquet otherwise.
	Output string
	// Attempts per task (default 4); PerTask caps the rows per task
	// (default 1): attempts stop once that many succeeded.
	Attempts int
	PerTask  int
	// MinReward is the reward a trajectory needs to be exported (default 1).
	MinReward float64
	Workers   int // tasks in flight (default 2)
	Logger    *slog.Logger
}

// Stats count what an export did.
type Stats struct {
	Tasks        int `json:"tasks"`
	Unloadable   int `json:"unloadable"`
	Attempts     int `json:"attempts"`
	Solved       int `json:"solved"`
	InfraFailed  int `json:"infra_failed"`
	TaskDefects  int `json:"task_defects"`
	Exported     int `json:"exported"`
	TasksWithRow int `json:"tasks_with_row"`
}

// Export runs the teacher and writes the solved trajectories.
func Export(ctx context.Context, o Options) (Stats, error) {
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	if o.PerTask <= 0 {
		o.PerTask = 1
	}
	if o.MinReward == 0 {
		o.MinReward = 1
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var st Stats
	if err := os.MkdirAll(filepath.Dir(o.Output), 0o755); err != nil {
		return st, err
	}
	tmp := o.Output + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return st, err
	}
	w := newRowWriter(f, o.Output)
	var writeErr error
	var mu sync.Mutex

	s := stream.New().WithMaxGoroutines(o.Workers)
	eachErr := o.Source.Each(ctx, nil, func(rec pool.Record) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.Go(func() stream.Callback {
			rows, ts := o.task(ctx, rec, log)
			return func() {
				mu.Lock()
				defer mu.Unlock()
				st.add(ts)
				if writeErr == nil && len(rows) > 0 {
					writeErr = w.Write(rows)
				}
			}
		})
		return nil
	})
	s.Wait()
	err = errors.Join(eachErr, writeErr, ctx.Err())
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return st, err
	}
	return st, os.Rename(tmp, o.Output)
}

// rowWriter writes the exported rows in the output's format.
type rowWriter interface {
	Write(rows []Row) error
	Close() error
}

func newRowWriter(f *os.File, name string) rowWriter {
	if strings.HasSuffix(name, ".jsonl") {
		buf := bufio.NewWriter(f)
		return &jsonlWriter{buf: buf, enc: json.NewEncoder(buf)}
	}
	return parquetWriter{parquet.NewGenericWriter[Row](f, parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
		parquet.MaxRowsPerRowGroup(1000), parquet.CreatedBy("otcurate", "0.1.0", "dev"))}
}

type parquetWriter struct{ w *parquet.GenericWriter[Row] }

func (p parquetWriter) Write(rows []Row) error { _, err := p.w.Write(rows); return err }
func (p parquetWriter) Close() error           { return p.w.Close() }

type jsonlWriter struct {
	buf *bufio.Writer
	enc *json.Encoder
}

func (j *jsonlWriter) Write(rows []Row) error {
	for i := range rows {
		if err := j.enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("trajectory %s: %w", rows[i].Episode, err)
		}
	}
	return nil
}

func (j *jsonlWriter) Close() error { return j.buf.Flush() }

func (s *Stats) add(t Stats) {
	s.Tasks += t.Tasks
	s.Unloadable += t.Unloadable
	s.Attempts += t.Attempts
	s.Solved += t.Solved
	s.InfraFailed += t.InfraFailed
	s.TaskDefects += t.TaskDefects
	s.Exported += t.Exported
	s.TasksWithRow += t.TasksWithRow
}

// task runs the attempts of one task.
func (o Options) task(ctx context.Context, rec pool.Record, log *slog.Logger) ([]Row, Stats) {
	st := Stats{Tasks: 1}
	if rec.Err != nil {
		st.Unloadable++
		log.Warn("task unreadable", "task", rec.Path, "err", rec.Err)
		return nil, st
	}
	t, err := trial.LoadTask(rec.Path, rec.Blob, o.Limits)
	if err != nil {
		st.Unloadable++
		log.Warn("task invalid", "task", rec.Path, "err", err)
		return nil, st
	}
	var rows []Row
	for i := 0; i < o.Attempts && len(rows) < o.PerTask; i++ {
		episode := fmt.Sprintf("%s#%d", t.Path, i)
		h := &agent.Harness{Policy: o.Policy, Config: o.Harness, Session: episode}
		a, err := agent.RunAttempt(ctx, o.Runner, t, h, o.Labels)
		if err != nil {
			return rows, st // cancelled
		}
		st.Attempts++
		switch {
		case a.Result.Infra():
			st.InfraFailed++
			continue
		case a.Result.TaskDefect():
			st.TaskDefects++
			log.Warn("task defect during traces", "task", t.Path, "outcome", a.Result.Outcome, "detail", a.Result.Detail)
			return rows, st
		}
		if a.Reward() < o.MinReward || a.Trajectory == nil {
			continue
		}
		st.Solved++
		tr := a.Trajectory
		row := Row{Task: t.Path, Reward: a.Reward(), Agent: o.Policy.Name(), Episode: episode,
			Turns: int32(len(tr.Turns)), End: string(tr.End)}
		if n := len(tr.Turns); n > 0 {
			row.Model = tr.Turns[n-1].Completion.Model
		}
		msgs := tr.Messages
		for len(msgs) > 0 && msgs[len(msgs)-1].Role != policy.RoleAssistant {
			msgs = msgs[:len(msgs)-1] // an SFT row ends with the assistant's reply
		}
		for _, m := range msgs {
			row.Conversations = append(row.Conversations, Message{Role: m.Role, Content: m.Content})
		}
		rows = append(rows, row)
	}
	st.Exported = len(rows)
	if len(rows) > 0 {
		st.TasksWithRow = 1
	}
	return rows, st
}

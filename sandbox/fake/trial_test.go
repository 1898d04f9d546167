package fake_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/fake"
	"github.com/otcurate/otcurate/sandbox/fake/faketest"
	"github.com/otcurate/otcurate/trial"
	"github.com/otcurate/otcurate/trial/trialtest"
)

const fixtures = "../../testdata/harbor-examples"

// backend is a fake backend for a test (run in parallel), skipped
// without root.
func backend(t *testing.T) *fake.Backend {
	t.Helper()
	t.Parallel()
	b, _ := faketest.Backend(t, "test-trial-")
	return b
}

func loadDir(t *testing.T, dir string) *trial.Task {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.EncodeDir(&buf, dir); err != nil {
		t.Fatal(err)
	}
	task, err := trial.LoadTask(filepath.Base(dir), buf.Bytes(), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func score(t *testing.T, b sandbox.Backend, task *trial.Task, agent trial.Agent) trial.Result {
	t.Helper()
	r := &trial.Runner{Backend: b}
	res, err := r.Run(context.Background(), task, trial.Options{Agent: agent, Repeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	return res[0]
}

func wantReward(t *testing.T, r trial.Result, want float64) {
	t.Helper()
	if r.Outcome != trial.Scored || r.Reward == nil || *r.Reward != want {
		t.Errorf("%s/%s: %s reward=%v, want scored %v (%s)\n%s", r.Task, r.Agent, r.Outcome, r.Reward, want, r.Detail, r.Log)
	}
}

// TestTrialOnFake: the trial runner scores a task 1 with its oracle and 0
// with the nop agent on the fake backend.
func TestTrialOnFake(t *testing.T) {
	b := backend(t)
	t.Run("synthetic", func(t *testing.T) {
		task := trialtest.DoneTask(t, "done", "[verifier]\ntimeout_sec = 20\n[agent]\ntimeout_sec = 20\n",
			"FROM debian:bookworm\nWORKDIR /app\n",
			"#!/bin/bash\nif [ \"$(cat /app/done 2>/dev/null)\" = \"$(cat /tests/expected.txt)\" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
			"#!/bin/bash\necho done > /app/done\n")
		wantReward(t, score(t, b, task, trial.Oracle), 1)
		wantReward(t, score(t, b, task, trial.Nop), 0)
	})
	t.Run("healthcheck", func(t *testing.T) {
		// hello-healthcheck without its apt-get (a minute of mirror
		// traffic): an entrypoint starts a server the healthcheck polls.
		fixture := filepath.Join(fixtures, "hello-healthcheck")
		files := map[string]string{
			"environment/Dockerfile": "FROM python:3.13-slim\nWORKDIR /app\nRUN echo ok > /app/index.html\n" +
				"COPY entrypoint.sh /entrypoint.sh\nRUN chmod +x /entrypoint.sh\nENTRYPOINT [\"/entrypoint.sh\"]\n",
		}
		for _, name := range []string{"instruction.md", "task.toml", "environment/entrypoint.sh", "tests/test.sh", "solution/solve.sh"} {
			data, err := os.ReadFile(filepath.Join(fixture, name))
			if err != nil {
				t.Fatal(err)
			}
			files[name] = string(data)
		}
		task := trialtest.Task(t, "healthcheck", files)
		wantReward(t, score(t, b, task, trial.Oracle), 1)
		wantReward(t, score(t, b, task, trial.Nop), 0)
	})
	for _, name := range []string{"hello-user", "hello-workdir"} {
		t.Run(name, func(t *testing.T) {
			task := loadDir(t, filepath.Join(fixtures, name))
			wantReward(t, score(t, b, task, trial.Oracle), 1)
			wantReward(t, score(t, b, task, trial.Nop), 0)
		})
	}
}

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
)

// TestMultiStepPoolIsOneRowDropped: pack and validate on a folder holding
// a multi-step task (testdata/multi-step) see one task at its root, never
// a step folder, and validate drops it as unsupported_task_kind naming
// its steps (issue 22: the step was packed and validate said
// missing_task_toml).
func TestMultiStepPoolIsOneRowDropped(t *testing.T) {
	const dir = "../../testdata/multi-step"
	ds := filepath.Join(t.TempDir(), "ms.parquet")
	stdout, code := run(t, "pack", dir, "-o", ds)
	if code != 0 || !strings.Contains(stdout, "packed 1 tasks") {
		t.Fatalf("pack exit %d: %s", code, stdout)
	}
	for _, pool := range []string{dir, ds} {
		stdout, code := run(t, "validate", "--pool", pool, "--json")
		if code != exitItemFailure {
			t.Fatalf("validate %s: exit %d, want %d", pool, code, exitItemFailure)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 1 {
			t.Fatalf("validate %s: %d rows, want 1", pool, len(lines))
		}
		var d struct{ Path, Verdict, Reason, Detail string }
		if err := json.Unmarshal([]byte(lines[0]), &d); err != nil {
			t.Fatal(err)
		}
		if d.Path != "ledger-two-milestones" || d.Verdict != "drop" || d.Reason != bundle.ReasonUnsupportedTaskKind ||
			!strings.Contains(d.Detail, "milestone_1, milestone_2") {
			t.Errorf("validate %s: %+v", pool, d)
		}
	}
}

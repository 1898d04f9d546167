package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrainReportShowsTheLastStepsGroups(t *testing.T) {
	dir := t.TempDir()
	metrics := `{"step":1,"mean_reward":0.25,"pass_at_k":0.5,"zero_variance_share":0.5,"overhead_share":0.01,"groups":[{"task":"task-7","scored":8,"passed":0},{"task":"task-3","scored":8,"passed":4}]}
{"step":2,"mean_reward":0.5,"pass_at_k":1,"zero_variance_share":0,"overhead_share":0.02,"groups":[{"task":"task-1","scored":8,"passed":3},{"task":"task-9","scored":7,"passed":5}]}
`
	evals := `{"step":0,"pass_rate":0.25}
{"step":2,"pass_rate":0.5}
`
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(metrics), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "eval.jsonl"), []byte(evals), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrainReport(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"2 steps", "task-1 3/8, task-9 5/7", "held-out pass rate"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "task-7") {
		t.Error("the last-step table shows an earlier step's groups")
	}
}

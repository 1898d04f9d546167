package filters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
)

// realismLabel is one line of testdata/realism/labels.jsonl.
type realismLabel struct {
	Task    string   `json:"task"`
	Verdict string   `json:"verdict"` // keep | drop
	Reason  string   `json:"reason"`  // the drop reason
	Flags   []string `json:"flags"`   // every finding lint must report
	Why     string   `json:"why"`
	// AllowNetwork runs lint as a build with --allow-network does.
	AllowNetwork bool `json:"allow_network"`
}

// TestLintRealismCorpus runs lint with the default actions on every task
// of the realism corpus (tasks written the way public Harbor pools write
// them; see testdata/realism/README.md) and checks each verdict, drop
// reason and set of findings against its label. It logs the confusion
// table of keep/drop.
func TestLintRealismCorpus(t *testing.T) {
	dir := "../testdata/realism"
	f, err := os.Open(filepath.Join(dir, "labels.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var labels []realismLabel
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l realismLabel
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("labels.jsonl: %v", err)
		}
		labels = append(labels, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(labels) < 25 {
		t.Fatalf("only %d labelled tasks", len(labels))
	}
	var confusion [2][2]int // [label drop][lint drop]
	for _, l := range labels {
		var buf bytes.Buffer
		if err := bundle.EncodeDir(&buf, filepath.Join(dir, l.Task)); err != nil {
			t.Fatal(err)
		}
		out := Lint{AllowNetwork: l.AllowNetwork}.Process(context.Background(), itemFromBlob(t, buf.Bytes()))
		gotDrop, wantDrop := out.Verdict == pipeline.Drop, l.Verdict == "drop"
		confusion[b2i(wantDrop)][b2i(gotDrop)]++
		flags := slices.Clone(out.Flags)
		sort.Strings(flags)
		want := slices.Clone(l.Flags)
		sort.Strings(want)
		name := l.Task
		if l.AllowNetwork {
			name += " (--allow-network)"
		}
		if testing.Verbose() {
			t.Logf("%s: %s/%s %s", name, out.Verdict, out.Reason, out.Detail)
		}
		switch {
		case gotDrop != wantDrop:
			t.Errorf("%s: lint %s/%s, labelled %s (%s)\n  detail: %s", name, out.Verdict, out.Reason, l.Verdict, l.Why, out.Detail)
		case wantDrop && out.Reason != l.Reason:
			t.Errorf("%s: dropped as %s, labelled %s\n  detail: %s", name, out.Reason, l.Reason, out.Detail)
		case !slices.Equal(flags, want):
			t.Errorf("%s: findings %v, labelled %v\n  detail: %s", name, flags, want, out.Detail)
		}
	}
	t.Logf("realism corpus, %d tasks: labelled drop → dropped %d, kept %d; labelled keep → kept %d, dropped %d",
		len(labels), confusion[1][1], confusion[1][0], confusion[0][0], confusion[0][1])
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BenchmarkLintRealism: one lint pass over every realism corpus task
// (decoded once, outside the timing).
func BenchmarkLintRealism(b *testing.B) {
	dir := "../testdata/realism"
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var items []*pipeline.Item
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		var buf bytes.Buffer
		if err := bundle.EncodeDir(&buf, filepath.Join(dir, e.Name())); err != nil {
			b.Fatal(err)
		}
		bd, err := bundle.Scan(buf.Bytes(), bundle.Limits{}, bundle.DefaultRetain())
		if err != nil {
			b.Fatal(err)
		}
		info, err := bundle.Validate(bd)
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, &pipeline.Item{Task: &pipeline.Task{}, Bundle: bd, Info: info})
	}
	b.ResetTimer()
	for b.Loop() {
		for _, it := range items {
			Lint{}.Process(context.Background(), it)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items))/1000, "µs/task")
}

package realsize

import (
	"bytes"
	"testing"

	"github.com/otcurate/otcurate/bundle"
)

// TestFilesDistribution checks the filler's sizes land where the package
// doc says: with a base task of about 3 KB inflated / 1.3 KB compressed,
// about 36 KB inflated and 6 KB compressed per task, with a tail.
func TestFilesDistribution(t *testing.T) {
	p := NewPadder(1)
	const n = 600
	var raws, gzs []float64
	for i := 0; i < n; i++ {
		es := p.Files()
		raw := 0
		for _, e := range es {
			raw += len(e.Data)
		}
		var buf bytes.Buffer
		if err := bundle.Encode(&buf, es); err != nil {
			t.Fatal(err)
		}
		raws, gzs = append(raws, float64(raw)), append(gzs, float64(buf.Len()))
	}
	st := statsOf(raws, gzs)
	t.Logf("filler alone: %s", st)
	for _, c := range []struct {
		name     string
		got      float64
		low, top float64
	}{
		{"mean inflated", st.MeanRaw, 28 << 10, 40 << 10},
		{"mean compressed", st.MeanGz, 3.5 * 1024, 6 * 1024},
		{"inflated p99", st.P99Raw, 150 << 10, 600 << 10},
		{"inflated p50", st.P50Raw, 12 << 10, 22 << 10},
	} {
		if c.got < c.low || c.got > c.top {
			t.Errorf("%s = %.0f bytes, want %.0f..%.0f", c.name, c.got, c.low, c.top)
		}
	}
}

func TestPadderIsDeterministic(t *testing.T) {
	a, b := NewPadder(3).Files(), NewPadder(3).Files()
	if len(a) != len(b) {
		t.Fatalf("%d files vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Fatalf("file %d differs: %s vs %s", i, a[i].Name, b[i].Name)
		}
	}
}

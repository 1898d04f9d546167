package train

import (
	"math"
	"testing"
)

func TestRLOON(t *testing.T) {
	cases := []struct {
		name     string
		rewards  []float64
		included []bool
		groups   []int
		min      int
		want     []float64
		stats    GroupStats
	}{
		{"worked example n=8", []float64{1, 1, 0, 0, 0, 0, 0, 0}, all(8), zeros(8), 2,
			[]float64{0.857142857, 0.857142857, -0.285714286, -0.285714286, -0.285714286, -0.285714286, -0.285714286, -0.285714286},
			GroupStats{Groups: 1}},
		{"an infra failure leaves the baseline", []float64{1, 1, 0, 0, 0, 0, 0, 0},
			[]bool{true, true, true, true, true, true, true, false}, zeros(8), 2,
			[]float64{0.833333333, 0.833333333, -0.333333333, -0.333333333, -0.333333333, -0.333333333, -0.333333333, 0},
			GroupStats{Groups: 1, Excluded: 1}},
		{"zero variance", []float64{1, 1, 1, 1}, all(4), zeros(4), 2, []float64{0, 0, 0, 0}, GroupStats{Groups: 1, ZeroVariance: 1}},
		{"below the minimum group size", []float64{1, 0, 0, 0}, []bool{true, true, false, false}, zeros(4), 4,
			[]float64{0, 0, 0, 0}, GroupStats{Groups: 1, BelowMin: 1, Excluded: 2}},
		{"two groups, independent baselines", []float64{1, 0, 1, 1, 0, 1}, all(6), []int{7, 7, 7, 3, 3, 3}, 2,
			[]float64{0.5, -1, 0.5, 0.5, -1, 0.5}, GroupStats{Groups: 2}},
		{"partial rewards", []float64{0.5, 0, 1}, all(3), zeros(3), 2, []float64{0, -0.75, 0.75}, GroupStats{Groups: 1}},
	}
	for _, c := range cases {
		got, st := RLOON(c.rewards, c.included, c.groups, c.min)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-6 {
				t.Errorf("%s: advantages %v, want %v", c.name, got, c.want)
				break
			}
		}
		if st != c.stats {
			t.Errorf("%s: stats %+v, want %+v", c.name, st, c.stats)
		}
		var sum float64
		for _, a := range got {
			sum += a
		}
		if math.Abs(sum) > 1e-9 {
			t.Errorf("%s: advantages sum to %g", c.name, sum)
		}
	}
}

func all(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

func zeros(n int) []int { return make([]int, n) }

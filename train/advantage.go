package train

import "math"

// GroupStats counts what the advantage computation did to a batch.
type GroupStats struct {
	Groups       int `json:"groups"`
	ZeroVariance int `json:"zero_variance_groups"` // included rewards all equal: A = 0
	BelowMin     int `json:"below_min_groups"`     // fewer included samples than the minimum: A = 0
	Excluded     int `json:"excluded_samples"`     // out of the baseline (infrastructure, broken task)
}

// RLOON computes leave-one-out advantages with rloo_n semantics (SkyRL's
// compute_rloo_n_outcome_advantage). rewards and
// included are per sample, groups[i] is sample i's group id. Per group:
// excluded samples get 0 and stay out of the baseline; a group with fewer
// than minGroup included samples, or whose included rewards are all
// equal (within 1e-9), gets 0 everywhere; otherwise included sample i gets
// A_i = n/(n−1)·(r_i − mean), n the number of included samples. No std
// normalisation.
func RLOON(rewards []float64, included []bool, groups []int, minGroup int) ([]float64, GroupStats) {
	if minGroup < 2 {
		minGroup = 2
	}
	adv := make([]float64, len(rewards))
	members := map[int][]int{}
	var order []int
	for i, g := range groups {
		if _, ok := members[g]; !ok {
			order = append(order, g)
		}
		members[g] = append(members[g], i)
	}
	var st GroupStats
	for _, g := range order {
		st.Groups++
		var inc []int
		for _, i := range members[g] {
			if included[i] {
				inc = append(inc, i)
			} else {
				st.Excluded++
			}
		}
		if len(inc) < minGroup {
			st.BelowMin++
			continue
		}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, i := range inc {
			lo, hi = math.Min(lo, rewards[i]), math.Max(hi, rewards[i])
			sum += rewards[i]
		}
		if hi-lo <= 1e-9 {
			st.ZeroVariance++
			continue
		}
		n := float64(len(inc))
		mean := sum / n
		for _, i := range inc {
			adv[i] = n / (n - 1) * (rewards[i] - mean)
		}
	}
	return adv, st
}

package similarity

// IndelRatio is 1 - indel distance / (len(a)+len(b)) over two word
// sequences, i.e. 2·LCS/(len(a)+len(b)): the measure of rapidfuzz's and
// python-Levenshtein's fuzz.ratio, here on normalised words instead of
// characters (a substitution costs two edits). Two empty sequences give 1.
// It costs O(len(a)·len(b)) time and O(min) memory.
func IndelRatio(a, b []uint64) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	prev := make([]int32, len(b)+1)
	cur := make([]int32, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return 2 * float64(prev[len(b)]) / float64(len(a)+len(b))
}

// MaxIndelRatio is an upper bound of IndelRatio from the lengths alone:
// the LCS is at most the shorter sequence.
func MaxIndelRatio(n, m int) float64 {
	if n+m == 0 {
		return 1
	}
	return 2 * float64(min(n, m)) / float64(n+m)
}

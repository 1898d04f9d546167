package similarity

// Signature is a MinHash signature: one 16-bit value per bin (b-bit
// minwise hashing with b = 16: two signatures agree on a bin with
// probability J + (1-J)/65536, so estimates are unbiased to 2e-5).
type Signature []uint16

// emptyBin marks a bin no shingle fell into, before densification.
const emptyBin = ^uint64(0)

// Sign computes a one-permutation MinHash signature of k bins over a
// shingle set (Li, Owen and Zhang 2012): each shingle is hashed once and
// its hash lands in one bin, keeping the minimum per bin; empty bins
// borrow the value of the next non-empty bin to the right, rotated
// (Shrivastava 2017), so short texts still give comparable signatures.
// It costs one hash per shingle, not k. A nil or empty set gives a
// signature of zeros.
func Sign(shingles []uint32, k int, seed uint64) Signature {
	sig := make(Signature, k)
	SignInto(sig, shingles, seed)
	return sig
}

// SignInto is Sign into sig, whose length is the number of bins; it
// allocates nothing for up to 64 bins.
func SignInto(sig Signature, shingles []uint32, seed uint64) {
	k := len(sig)
	var small [64]uint64
	bins := small[:0]
	if k <= len(small) {
		bins = small[:k]
	} else {
		bins = make([]uint64, k)
	}
	for i := range bins {
		bins[i] = emptyBin
	}
	for _, s := range shingles {
		h := mix64(uint64(s) ^ seed)
		b := (h >> 32) % uint64(k)
		if v := h & 0xffffffff; v < bins[b] {
			bins[b] = v
		}
	}
	if len(shingles) == 0 {
		clear(sig)
		return
	}
	for i := range bins {
		v, off := bins[i], uint64(0)
		for j := i; v == emptyBin; {
			j = (j + 1) % k
			off++
			v = bins[j]
		}
		// A borrowed value is salted by its distance so that two bins
		// borrowing from one bin do not look like two agreements.
		sig[i] = uint16(mix64(v+off*0x9e3779b97f4a7c15) >> 48)
	}
}

// Estimate is the fraction of bins on which two signatures agree: an
// estimate of the Jaccard similarity of their sets.
func Estimate(a, b Signature) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	return float64(same) / float64(len(a))
}

// BandKey hashes rows [i*r, (i+1)*r) of a signature, for LSH banding: two
// sets whose Jaccard similarity is J share a band's key with probability
// about J^r.
func BandKey(sig Signature, i, r int) uint64 {
	h := uint64(i+1) * 0x9e3779b97f4a7c15
	for _, v := range sig[i*r : (i+1)*r] {
		h = mix64(h ^ uint64(v))
	}
	return h
}

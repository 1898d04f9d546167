package similarity

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Hello,  World!\nsecond\tline", "hello world second line"},
		{"timeout 30s, file2.txt and 1,500 rows", "timeout 0s file0 txt and 0 0 rows"},
		{"x_max = foo.bar(3.14)", "x_max foo bar 0 0"},
		{"Größe ÄNDERN", "größe ändern"},
		{"", ""},
	} {
		if got := strings.Join(Words([]byte(c.in)), " "); got != c.want {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// WordHashesOf hashes the words Words makes.
	text := []byte("Größe 12x, foo_bar\n3.5")
	if a, b := WordHashesOf(text), WordHashes(Words(text)); !slices.Equal(a, b) {
		t.Errorf("WordHashesOf %v, WordHashes(Words) %v", a, b)
	}
	// Re-wrapping and changed numbers give the same words.
	a := Words([]byte("Keep the 10 largest\nfiles in /data."))
	b := Words([]byte("Keep the 25 largest files\n  in /data ."))
	if strings.Join(a, " ") != strings.Join(b, " ") {
		t.Errorf("%q != %q", a, b)
	}
}

func TestJaccard(t *testing.T) {
	for _, c := range []struct {
		a, b []uint32
		want float64
	}{
		{nil, nil, 1},
		{[]uint32{1, 2, 3}, nil, 0},
		{[]uint32{1, 2, 3}, []uint32{1, 2, 3}, 1},
		{[]uint32{1, 2, 3, 4}, []uint32{3, 4, 5, 6}, 2.0 / 6},
	} {
		if got := Jaccard(c.a, c.b); got != c.want {
			t.Errorf("Jaccard(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	s := Shingles(strings.Fields("a b c d e f"), 4)
	if len(s) != 3 {
		t.Errorf("6 words give %d 4-word shingles, want 3", len(s))
	}
	if s := Shingles([]string{"short"}, 4); len(s) != 1 {
		t.Errorf("a 1-word text gives %d shingles, want 1", len(s))
	}
}

// TestSignEstimates: MinHash estimates track the exact Jaccard similarity
// of random sets within 4 standard errors, for big and small sets.
func TestSignEstimates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{20, 300, 3000} {
		for _, share := range []float64{0, 0.3, 0.6, 0.9, 1} {
			common := int(float64(n) * share)
			var a, b []uint32
			for i := 0; i < n; i++ {
				v := r.Uint32()
				a = append(a, v)
				if i < common {
					b = append(b, v)
				} else {
					b = append(b, r.Uint32())
				}
			}
			a, b = sortedSet(a), sortedSet(b)
			exact := Jaccard(a, b)
			est := Estimate(Sign(a, 128, 7), Sign(b, 128, 7))
			if se := math.Sqrt(exact*(1-exact)/128) + 0.01; math.Abs(est-exact) > 4*se {
				t.Errorf("n=%d share=%.1f: estimate %.3f, exact %.3f", n, share, est, exact)
			}
		}
	}
	if e := Estimate(Sign(nil, 16, 1), Sign([]uint32{1}, 16, 1)); e == 1 {
		t.Error("an empty set looks identical to a non-empty one")
	}
}

func sortedSet(v []uint32) []uint32 {
	out := append([]uint32(nil), v...)
	slices.Sort(out)
	return slices.Compact(out)
}

func TestIndelRatio(t *testing.T) {
	h := func(s string) []uint64 { return WordHashes(strings.Fields(s)) }
	for _, c := range []struct {
		a, b string
		want float64
	}{
		{"", "", 1},
		{"a b c", "", 0},
		{"a b c d", "a b c d", 1},
		{"a b c d", "a x c d", 0.75},    // LCS 3 of 4+4
		{"a b c d e", "b c d e f", 0.8}, // LCS 4 of 5+5
		{"a b", "a b c d e f", 0.5},     // LCS 2 of 2+6
	} {
		if got := IndelRatio(h(c.a), h(c.b)); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("IndelRatio(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got, bound := IndelRatio(h(c.a), h(c.b)), MaxIndelRatio(len(h(c.a)), len(h(c.b))); got > bound {
			t.Errorf("ratio %v above its bound %v", got, bound)
		}
	}
}

// TestNGramHashes: the rolled hashes are NGramHash's, for every n and
// length, and ShinglesOf folds the same values; a changed word order
// changes the hash.
func TestNGramHashes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, l := range []int{0, 1, 3, 4, 5, 17, 300, 1000} {
		hs := make([]uint64, l)
		for i := range hs {
			hs[i] = r.Uint64() % 50 // few distinct words: repeats
		}
		for _, n := range []int{1, 2, 4, 8} {
			got := NGramHashes(nil, hs, n)
			if want := max(l-n+1, 0); len(got) != want {
				t.Fatalf("len %d n %d: %d grams, want %d", l, n, len(got), want)
			}
			var fold []uint32
			for i := range got {
				if want := NGramHash(hs, i, n); got[i] != want {
					t.Fatalf("len %d n %d gram %d: rolled %x, direct %x", l, n, i, got[i], want)
				}
				fold = append(fold, uint32(got[i]^got[i]>>32))
			}
			if l >= n {
				slices.Sort(fold)
				if sh := ShinglesOf(hs, n); !slices.Equal(sh, slices.Compact(fold)) {
					t.Fatalf("len %d n %d: ShinglesOf differs from the sorted rolled grams", l, n)
				}
			}
		}
	}
	if NGramHash([]uint64{1, 2, 3, 4}, 0, 4) == NGramHash([]uint64{2, 1, 3, 4}, 0, 4) {
		t.Error("swapping two words does not change the 4-gram hash")
	}
	if NGramHash([]uint64{1, 2, 3, 4}, 0, 4) == NGramHash([]uint64{1, 2, 3, 4, 0}, 0, 5) {
		t.Error("a 5-gram ending in word 0 hashes as the 4-gram before it")
	}
}

// TestWordHashesOfMatchesWords: the table-driven hasher gives the hashes of
// the words Words makes, on random text mixing ASCII, digits, marks and
// other scripts.
func TestWordHashesOfMatchesWords(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []rune("aZ_09 \n\t.,-=(Ää߀é\u0301٣日本\u00a0x")
	for range 2000 {
		rs := make([]rune, r.IntN(40))
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		text := []byte(string(rs))
		if a, b := WordHashesOf(text), WordHashes(Words(text)); !slices.Equal(a, b) {
			t.Fatalf("%q: WordHashesOf %v, WordHashes(Words) %v", text, a, b)
		}
	}
	bad := []byte("ab\xffcd \xc3") // invalid UTF-8 separates words
	if a, b := WordHashesOf(bad), WordHashes(Words(bad)); !slices.Equal(a, b) {
		t.Errorf("%q: WordHashesOf %v, WordHashes(Words) %v", bad, a, b)
	}
}

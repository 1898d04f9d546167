package poolgen

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
)

// TestKataSourceFiles checks that every embedded file under katas/ is the
// source of the table entry its name says (family.py, <fn>.py, <fn>.wrong.py),
// so a misnamed, stray or unreferenced file fails rather than being ignored,
// and that no identifier placeholder survives expansion.
func TestKataSourceFiles(t *testing.T) {
	families := map[string]*kataFamily{}
	for _, f := range kataFamilies {
		families[f.ID] = f
	}
	n := 0
	err := fs.WalkDir(kataFS, "katas", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel := strings.TrimPrefix(p, "katas/")
		f := families[path.Dir(rel)]
		if f == nil {
			t.Errorf("%s: no kata family %q", p, path.Dir(rel))
			return nil
		}
		src := kataSource(rel)
		base := path.Base(rel)
		var want []string
		switch {
		case base == "family.py":
			want = []string{f.Ref}
		case strings.HasSuffix(base, ".wrong.py"):
			for _, vv := range f.Variants {
				if vv.Fn == strings.TrimSuffix(base, ".wrong.py") {
					want = append(want, vv.WrongRef)
				}
			}
		default:
			for _, vv := range f.Variants {
				if vv.Fn == strings.TrimSuffix(base, ".py") {
					want = append(want, vv.Ref)
				}
			}
		}
		if len(want) != 1 || want[0] != src {
			t.Errorf("%s is not the source of the table entry it names (found %d matching entries)", p, len(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < len(kataFamilies) {
		t.Errorf("%d source files for %d families", n, len(kataFamilies))
	}
	leftover := regexp.MustCompile(`__[A-Z]+__`)
	for _, f := range kataFamilies {
		for v, vv := range f.Variants {
			for _, s := range []string{vv.expand(f.ref(v)), vv.expand(f.wrong(v))} {
				if m := leftover.FindString(s); m != "" {
					t.Errorf("%s/v%d: placeholder %s left after expansion", f.ID, v+1, m)
				}
			}
		}
	}
}

// kataSourcesGolden is the hash of every variant's expanded reference and
// wrong implementation and of the batch script, as loaded from the embedded
// files. The generated pools are a function of these sources: if you change
// one on purpose, update the hash and say so in the commit message.
const kataSourcesGolden = "4388f1a96865a6a6b6f212362888596a54829988ddfb3e2e300e30898ad6002b"

func TestKataSourcesGolden(t *testing.T) {
	h := sha256.New()
	for _, f := range kataFamilies {
		for v, vv := range f.Variants {
			for _, s := range []string{f.ID, vv.Fn, vv.expand(f.ref(v)), vv.expand(f.wrong(v))} {
				h.Write([]byte(s))
				h.Write([]byte{0})
			}
		}
	}
	h.Write([]byte(batchScript))
	if got := hex.EncodeToString(h.Sum(nil)); got != kataSourcesGolden {
		t.Errorf("kata sources hash %s, want %s: an embedded source changed or went missing", got, kataSourcesGolden)
	}
}

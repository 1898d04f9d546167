package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/poolgen"
)

// checkSimpleTOML fails when decodeSimpleTOML accepts a document that
// go-toml rejects or decodes differently. It reports whether the fast path
// took the document.
func checkSimpleTOML(t *testing.T, doc string) bool {
	t.Helper()
	got, ok := bundle.DecodeSimpleTOML([]byte(doc))
	if !ok {
		return false
	}
	var want map[string]any
	if err := toml.Unmarshal([]byte(doc), &want); err != nil {
		t.Errorf("fast path accepted a document go-toml rejects (%v):\n%s", err, doc)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fast path differs from go-toml:\n%s\nfast:    %#v\ngo-toml: %#v", doc, got, want)
	}
	return true
}

// simpleTOMLCases are the table test's documents, and the fuzzer's seeds.
var simpleTOMLCases = []struct {
	doc  string
	fast bool // the fast path takes it
}{
	{"", true},
	{"# only a comment\n\n", true},
	{"schema_version = \"1.4\"\n[task]\nname = \"org/x\"\nkeywords = [\"a\", 'b', ]\n", true},
	{"version = '1.0'\r\n[verifier]\r\ntimeout_sec = 120.0 # seconds\r\n", true},
	{"[environment]\ncpus = 2\nmemory_mb = -4096\nstorage_mb = +0\nallow_internet = false\nx = true#c\n", true},
	{"[metadata]\ntags = []\nempty = [ ]\nmixed = [1, 2.5, \"s\", true]\nutf = \"café ✓\"\n", true},
	{"a = 0.5\nb = -0.0\nc = 9223372036854775807\n", true},
	{"[a]\nx = 1\n[b]\nx = 2\n", true},
	// Outside the subset: go-toml decides.
	{"a = \"tab\there\"\n", false},
	{"a = \"esc\\n\"\n", false},
	{"a.b = 1\n", false},
	{"\"quoted\" = 1\n", false},
	{"[a.b]\nx = 1\n", true},
	{"[a]\nx = 1\n[a.b]\ny = 2\n[a.c.d]\n[e.f]\n", true},
	{"[verifier.env]\n\n[solution.env]\n", true},
	{"[a.b]\n[a]\n", false}, // valid TOML, left to go-toml
	{"[a]\nb = 1\n[a.b]\n", false},
	{"[a.b]\n[a.b]\n", false},
	{"[a. b]\n", false},
	{"[a.]\n", false},
	{"[[steps]]\nx = 1\n", false},
	{"[ a ]\nx = 1\n", false},
	{"a = 1979-05-27\n", false},
	{"a = {x = 1}\n", false},
	{"a = [[1], [2]]\n", false},
	{"a = [\n1,\n2]\n", false},
	{"a = \"\"\"multi\"\"\"\n", false},
	{"a = 1_000\n", false},
	{"a = 0x10\n", false},
	{"a = 1e3\n", false},
	{"a = inf\n", false},
	{"a = 1.\n", false},
	{"a = .5\n", false},
	{"a = 01\n", false},
	{"a = 9223372036854775808\n", false},
	{"a = 1\na = 2\n", false},
	{"[a]\n[a]\n", false},
	{"a = 1\n[a]\n", false},
	{"a = \"x\" \"y\"\n", false},
	{"a = trueish\n", false},
	{"a = \"unterminated\n", false},
	{"a = [1, 2\n", false},
	{"a = [,]\n", false},
	{"a =\n", false},
	{"= 1\n", false},
	{"a = 1 # bell \x07\n", false},
	{"a = \"\xff\"\n", false},
	{"\ufeffa = 1\n", false},
}

func TestSimpleTOMLMatchesGoTOML(t *testing.T) {
	for _, tc := range simpleTOMLCases {
		if got := checkSimpleTOML(t, tc.doc); got != tc.fast {
			t.Errorf("fast path took %q: %v, want %v", tc.doc, got, tc.fast)
		}
	}
}

// TestSimpleTOMLTakesRealTaskFiles: the fast path must serve the task.toml
// files it exists for, the vendored Harbor examples here and generated
// tasks in TestSimpleTOMLTakesGeneratedTasks, with go-toml's result.
func TestSimpleTOMLTakesRealTaskFiles(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("../testdata/harbor-examples", "*", "task.toml"))
	if len(paths) == 0 {
		t.Fatal("no fixture task.toml")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// hello-healthcheck's authors are inline tables: go-toml's.
		if took := checkSimpleTOML(t, string(b)); took != !strings.Contains(p, "healthcheck") {
			t.Errorf("%s: the fast path took it: %v", p, took)
		}
	}
}

func FuzzSimpleTOML(f *testing.F) {
	for _, tc := range simpleTOMLCases {
		f.Add(tc.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) { checkSimpleTOML(t, doc) })
}

// TestSimpleTOMLTakesGeneratedTasks: every task.toml shape the generator
// writes (both families, defects included) goes through the fast path with
// go-toml's result, or falls back; at least nine in ten must take it.
func TestSimpleTOMLTakesGeneratedTasks(t *testing.T) {
	taken, n := 0, 0
	err := poolgen.Generate(context.Background(), poolgen.Options{N: 300, Seed: 3}, func(task poolgen.Task) error {
		for _, e := range task.Entries {
			if e.Name == "task.toml" {
				n++
				if checkSimpleTOML(t, string(e.Data)) {
					taken++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 200 || taken < n*9/10 {
		t.Errorf("the fast path took %d of %d generated task.toml files", taken, n)
	}
}

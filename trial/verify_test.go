package trial

import (
	"io/fs"
	"testing"

	"github.com/otcurate/otcurate/bundle"
)

// TestReadableTests: /tests gets chmod -R a+rX semantics, and the test
// script is executable.
func TestReadableTests(t *testing.T) {
	in := []bundle.Entry{
		{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o600},
		{Name: "data.txt", Kind: bundle.KindFile, Mode: 0o600},
		{Name: "tool", Kind: bundle.KindFile, Mode: 0o700},
		{Name: "sub", Kind: bundle.KindDir, Mode: 0o700},
		{Name: "link", Kind: bundle.KindSymlink, Linkname: "data.txt", Mode: 0o777},
	}
	want := map[string]fs.FileMode{"test.sh": 0o755, "data.txt": 0o644, "tool": 0o755, "sub": 0o755, "link": 0o777}
	for _, e := range readableTests(in, "test.sh") {
		if e.Mode != want[e.Name] {
			t.Errorf("%s: mode %o, want %o", e.Name, e.Mode, want[e.Name])
		}
	}
	if in[0].Mode != 0o600 {
		t.Error("readableTests changed its input")
	}
}

package pool

import (
	"strings"
	"testing"
)

// TestPathSetClaim: in pool order, a path already claimed is a duplicate,
// and one inside or holding a claimed path is nested; the later row is
// refused and leaves no claim behind.
func TestPathSetClaim(t *testing.T) {
	cases := []struct {
		name   string
		paths  []string
		want   []string // reason per row, "" for accepted
		detail string   // a substring of the last row's detail
	}{
		{"distinct", []string{"a", "b", "c/d", "c/e"}, []string{"", "", "", ""}, ""},
		{"shared parent is fine", []string{"tasks/a", "tasks/b", "tasks/ab"}, []string{"", "", ""}, ""},
		{"prefix as text is not nesting", []string{"a", "ab", "a-b/c"}, []string{"", "", ""}, ""},
		{"duplicate", []string{"a/b", "a/b"}, []string{"", ReasonDuplicatePath}, `path "a/b" already used by row 0`},
		{"nested under an earlier row", []string{"a", "a/b"}, []string{"", ReasonNestedPath}, `path "a/b" is inside "a", the path of row 0`},
		{"the issue 21 attack", []string{"lexical", "lexical/esc/tmp/x"}, []string{"", ReasonNestedPath}, `inside "lexical"`},
		{"deeply nested", []string{"x", "y/z", "y/z/1/2/3"}, []string{"", "", ReasonNestedPath}, `inside "y/z", the path of row 1`},
		{"holding an earlier row", []string{"a/b/c", "a"}, []string{"", ReasonNestedPath}, `path "a" holds the path of row 0`},
		{"holding, middle level", []string{"a/b/c", "a/b"}, []string{"", ReasonNestedPath}, "holds the path of row 0"},
		{"a refused row claims nothing", []string{"a", "a/b", "b", "a/b/c"}, []string{"", ReasonNestedPath, "", ReasonNestedPath}, `inside "a", the path of row 0`},
		{"refused holder claims nothing", []string{"a/b", "a", "a/c"}, []string{"", ReasonNestedPath, ""}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s PathSet
			var detail string
			for i, p := range tc.paths {
				reason, d := s.Claim(Record{Index: int64(i), Path: p, originFile: "pool.parquet", originRow: int64(i)})
				if reason != tc.want[i] {
					t.Fatalf("row %d (%s): reason %q (%s), want %q", i, p, reason, d, tc.want[i])
				}
				if (reason == "") != (d == "") {
					t.Fatalf("row %d: reason %q with detail %q", i, reason, d)
				}
				detail = d
			}
			if !strings.Contains(detail, tc.detail) {
				t.Errorf("detail %q does not mention %q", detail, tc.detail)
			}
		})
	}
}

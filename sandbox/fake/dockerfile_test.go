package fake

import (
	"reflect"
	"testing"

	"github.com/otcurate/otcurate/bundle"
)

func TestParseDockerfile(t *testing.T) {
	got, err := parseDockerfile([]byte("# syntax=docker/dockerfile:1\nFROM debian:bookworm AS base\n\nRUN apt-get update && \\\n    # a comment inside\n    apt-get install -y curl\nCOPY --chown=app:app --chmod=755 a b /dst/\nCMD [\"python\", \"-m\", \"http.server\"]\nenv A=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []instruction{
		{line: 2, cmd: "FROM", args: "debian:bookworm AS base"},
		{line: 4, cmd: "RUN", args: "apt-get update &&  apt-get install -y curl"},
		{line: 7, cmd: "COPY", flags: []string{"--chown=app:app", "--chmod=755"}, args: "a b /dst/"},
		{line: 8, cmd: "CMD", args: `["python", "-m", "http.server"]`, json: []string{"python", "-m", "http.server"}},
		{line: 9, cmd: "ENV", args: "A=1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%#v\nwant\n%#v", got, want)
	}
	if _, err := parseDockerfile([]byte("# only a comment\n")); err == nil {
		t.Error("a Dockerfile without instructions parsed")
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": "", "PATH": "/bin"}
	for _, tc := range []struct{ in, want string }{
		{"$A/x", "a/x"},
		{"${A}b", "ab"},
		{"${MISSING:-def}", "def"},
		{"${EMPTY:-def}", "def"},
		{"${A:-def}", "a"},
		{"${A:+set}", "set"},
		{"${MISSING:+set}", ""},
		{`\$A`, "$A"},
		{"$", "$"},
		{"/usr/local/bin:$PATH", "/usr/local/bin:/bin"},
		{"$1x", "$1x"},
	} {
		if got := expand(tc.in, vars); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKeyValues(t *testing.T) {
	vars := map[string]string{"HOME": "/root"}
	for _, tc := range []struct {
		in   string
		want [][2]string
		bad  bool
	}{
		{in: "A=1 B=\"two words\" C='$HOME' D=\"$HOME\"", want: [][2]string{{"A", "1"}, {"B", "two words"}, {"C", "$HOME"}, {"D", "/root"}}},
		{in: "LEGACY some value $HOME", want: [][2]string{{"LEGACY", "some value /root"}}},
		{in: "P=$HOME/bin", want: [][2]string{{"P", "/root/bin"}}},
		{in: "A=\"unterminated", bad: true},
	} {
		got, err := keyValues(tc.in, vars)
		if (err != nil) != tc.bad || (!tc.bad && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("keyValues(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestDockerignore(t *testing.T) {
	files := []struct{ name string }{{".dockerignore"}, {"Dockerfile"}, {"app/main.py"}, {"app/cache/x.pyc"}, {"notes.md"}, {"keep.md"}}
	ents := make([]bundle.Entry, len(files))
	for i, f := range files {
		ents[i] = file(f.name, "", 0o644)
	}
	ents[0] = file(".dockerignore", "# comment\n*.md\n!keep.md\napp/cache\n", 0o644)
	var got []string
	for _, e := range dockerignore(ents) {
		got = append(got, e.Name)
	}
	want := []string{".dockerignore", "Dockerfile", "app/main.py", "keep.md"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
}

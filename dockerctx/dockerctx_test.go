package dockerctx

import (
	"crypto/sha256"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func ctxFiles(names ...string) []File {
	var out []File
	for _, n := range names {
		out = append(out, File{Name: n, Digest: sha256.Sum256([]byte(n)), Size: 1})
	}
	return out
}

// placedMap renders the final image as dest -> context name.
func placedMap(t *testing.T, dockerfile string, ignore string, files []File) (map[string]string, []string) {
	t.Helper()
	df, err := Parse([]byte(dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	var ig *Ignore
	if ignore != "" {
		ig = ParseIgnore([]byte(ignore))
	}
	placed, probs := Resolve(df, files, ig)
	got := map[string]string{}
	for _, p := range placed {
		got[p.Dest] = p.File.Name
	}
	var ps []string
	for _, p := range probs {
		ps = append(ps, p.Kind+":"+p.Source)
	}
	sort.Strings(ps)
	return got, ps
}

func TestResolve(t *testing.T) {
	files := ctxFiles("Dockerfile", "app/main.py", "app/util.py", "tests/test_app.py", "tests/conftest.py",
		"run_tests.py", "data/in.csv", "notes.md")
	cases := []struct {
		name, dockerfile, ignore string
		want                     map[string]string
		problems                 []string
	}{
		{"file to dir", "FROM x\nCOPY run_tests.py /app/\n", "",
			map[string]string{"/app/run_tests.py": "run_tests.py"}, nil},
		{"file renamed", "FROM x\nCOPY run_tests.py /opt/r.py\n", "",
			map[string]string{"/opt/r.py": "run_tests.py"}, nil},
		{"directory contents, relative dest", "FROM x\nWORKDIR /srv\nCOPY tests ./t\n", "",
			map[string]string{"/srv/t/test_app.py": "tests/test_app.py", "/srv/t/conftest.py": "tests/conftest.py"}, nil},
		{"glob at depth", "FROM x\nCOPY tests/test_*.py *.md /dst/\n", "",
			map[string]string{"/dst/test_app.py": "tests/test_app.py", "/dst/notes.md": "notes.md"}, nil},
		{"json form with flags", "FROM x\nCOPY --chown=1000:1000 --chmod=644 --link [\"data\", \"/data\"]\n", "",
			map[string]string{"/data/in.csv": "data/in.csv"}, nil},
		{"whole context minus ignored", "FROM x\nCOPY . /app\n", "tests\n*.md\nDockerfile\n",
			map[string]string{"/app/app/main.py": "app/main.py", "/app/app/util.py": "app/util.py", "/app/run_tests.py": "run_tests.py", "/app/data/in.csv": "data/in.csv"}, nil},
		{"ignore with re-include and **", "FROM x\nCOPY . /w/\n", "**/*.py\n!tests/conftest.py\n*\n!tests\n",
			map[string]string{"/w/tests/conftest.py": "tests/conftest.py", "/w/tests/test_app.py": "tests/test_app.py"}, nil},
		{"multi-stage: only what reaches the final stage", "FROM x AS build\nCOPY tests /src/tests\nCOPY app /src/app\nFROM y\nCOPY --from=build /src/app /opt/app\n", "",
			map[string]string{"/opt/app/main.py": "app/main.py", "/opt/app/util.py": "app/util.py"}, nil},
		{"multi-stage: leaked through --from by index", "FROM x\nCOPY run_tests.py /tmp/r.py\nFROM y\nCOPY --from=0 /tmp/r.py /usr/local/bin/check\n", "",
			map[string]string{"/usr/local/bin/check": "run_tests.py"}, nil},
		{"stage inherits its base stage", "FROM x AS base\nCOPY data /data\nFROM base\nRUN true\n", "",
			map[string]string{"/data/in.csv": "data/in.csv"}, nil},
		{"external image and heredoc", "FROM x\nCOPY --from=ghcr.io/astral-sh/uv:latest /uv /bin/\nCOPY <<EOF /etc/x\nCOPY tests /t\nEOF\n", "",
			map[string]string{}, nil},
		{"ADD of a URL skipped, outside and missing reported", "FROM x\nADD https://example.com/a.tgz /a\nCOPY ../secret /s\nCOPY nope /n\n", "",
			map[string]string{}, []string{"missing_source:nope", "outside_context:../secret"}},
		{"continuation and comments", "FROM x\nCOPY \\\n# a comment inside\n  run_tests.py \\\n  /r/\n", "",
			map[string]string{"/r/run_tests.py": "run_tests.py"}, nil},
		{"empty line inside a continuation, file ending in one", "FROM x\nCOPY run_tests.py \\\n\n  /r/ \\\n", "",
			map[string]string{"/r/run_tests.py": "run_tests.py"}, nil},
		{"later copy to the same path wins", "FROM x\nCOPY run_tests.py /a/x.py\nCOPY tests/conftest.py /a/x.py\n", "",
			map[string]string{"/a/x.py": "tests/conftest.py"}, nil},
		{"--parents keeps the source path", "FROM x\nCOPY --parents tests/conftest.py /p/\n", "",
			map[string]string{"/p/tests/conftest.py": "tests/conftest.py"}, nil},
		{"--exclude relative to the source", "FROM x\nCOPY --exclude=tests --exclude=*.md . /app/\n", "",
			map[string]string{"/app/Dockerfile": "Dockerfile", "/app/app/main.py": "app/main.py", "/app/app/util.py": "app/util.py", "/app/run_tests.py": "run_tests.py", "/app/data/in.csv": "data/in.csv"}, nil},
		{"unresolved build argument: no problem reported", "FROM x\nARG SRC\nCOPY ${SRC}/x /x\n", "",
			map[string]string{}, nil},
		{"ARG in a path", "ARG SRC=tests\nFROM x\nCOPY ${SRC}/conftest.py /c.py\n", "",
			map[string]string{"/c.py": "tests/conftest.py"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := placedMap(t, tc.dockerfile, tc.ignore, files)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("placed %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(probs, tc.problems) {
				t.Errorf("problems %v, want %v", probs, tc.problems)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, dockerfile, want string }{
		{"no FROM", "RUN true\n", "before the first FROM"},
		{"empty", "# nothing\n", "no FROM"},
		{"unknown instruction", "FROM x\nCOPPY a b\n", "unknown instruction COPPY"},
		{"copy without dest", "FROM x\nCOPY a\n", "needs a source and a destination"},
		{"bad json", "FROM x\nCOPY [\"a\", \"b\"\n", "malformed JSON"},
		{"open heredoc", "FROM x\nRUN <<EOF\necho\n", "not terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.dockerfile))
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *Error with %q", err, tc.want)
			}
		})
	}
	df, err := Parse([]byte("# syntax=docker/dockerfile:1\nFROM python:3.11 AS Base\nRUN <<EOF\nCOPY nothing here\nEOF\nCOPY a /b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(df.Stages) != 1 || df.Stages[0].Name != "base" || len(df.Stages[0].Copies) != 1 || df.Stages[0].Copies[0].Line != 6 {
		t.Fatalf("parsed %+v", df)
	}
}

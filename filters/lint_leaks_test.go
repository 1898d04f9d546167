package filters

import (
	"reflect"
	"testing"
)

func TestComposeBuild(t *testing.T) {
	for _, tc := range []struct {
		name, compose   string
		ctx, dockerfile string
		found           bool
	}{
		{"mapping", "services:\n  main:\n    build:\n      context: ./app\n      dockerfile: docker/Dockerfile.dev\n    command: sleep infinity\n", "./app", "docker/Dockerfile.dev", true},
		{"scalar", "services:\n  main:\n    build: .\n  db:\n    image: postgres\n", ".", "", true},
		{"mapping without context", "services:\n  main:\n    build:\n      dockerfile: Dockerfile\n", ".", "Dockerfile", true},
		{"other service builds, main uses an image", "services:\n  main:\n    image: ubuntu:24.04\n  helper:\n    build:\n      context: ../tests\n", "", "", false},
		{"no services", "version: '3'\n", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, df, found := composeBuild(tc.compose)
			if found != tc.found || found && (ctx != tc.ctx || df != tc.dockerfile) {
				t.Fatalf("got %q %q %v, want %q %q %v", ctx, df, found, tc.ctx, tc.dockerfile, tc.found)
			}
		})
	}
}

func TestVerifierEntries(t *testing.T) {
	base := map[string]string{
		"instruction.md":         "Do it.\n",
		"task.toml":              "version = \"1.0\"\n",
		"environment/Dockerfile": "FROM x\n",
		"tests/test_outputs.py":  "def test(): pass\n",
		"tests/test_project.py":  "def test(): pass\n",
		"tests/helpers/run.sh":   "#!/bin/bash\npython3 $TEST_DIR/grade.py\n",
		"tests/grade.py":         "print(1)\n",
	}
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"pytest file and node id", "pytest -rA /tests/test_outputs.py::test_a --ctrf /logs/verifier/ctrf.json\n", []string{"tests/test_outputs.py"}},
		{"directory target names no file", "cd /app && python3 -m pytest /tests\n", nil},
		{"project copy under /app is not the verifier's", "cd /app && pytest tests/test_project.py\n", nil},
		{"relative after cd /tests", "cd /tests\npytest test_outputs.py test_project.py\n", []string{"tests/test_outputs.py", "tests/test_project.py"}},
		{"called script read in turn", "bash /tests/helpers/run.sh # then grade\n", []string{"tests/grade.py", "tests/helpers/run.sh"}},
		{"comment only", "# pytest /tests/test_outputs.py\necho 1 > /logs/verifier/reward.txt\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := lintItem(t, with(base, "tests/test.sh", "#!/bin/bash\n"+tc.script))
			if got := verifierEntries(it.Bundle, "tests/test.sh"); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

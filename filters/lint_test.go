package filters

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
)

func lintItem(t *testing.T, files map[string]string) *pipeline.Item {
	t.Helper()
	var entries []bundle.Entry
	for name, data := range files {
		mode := fsMode(name)
		entries = append(entries, bundle.Entry{Name: name, Kind: bundle.KindFile, Mode: mode, Data: []byte(data)})
	}
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return itemFromBlob(t, buf.Bytes())
}

func fsMode(name string) fs.FileMode {
	if filepath.Ext(name) == ".sh" {
		return 0o755
	}
	return 0o644
}

func itemFromBlob(t *testing.T, blob []byte) *pipeline.Item {
	t.Helper()
	b, err := bundle.Scan(blob, bundle.Limits{}, bundle.DefaultRetain())
	if err != nil {
		t.Fatal(err)
	}
	info, err := bundle.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	return &pipeline.Item{Task: &pipeline.Task{}, Bundle: b, Info: info}
}

func goodTask() map[string]string {
	return map[string]string{
		"instruction.md":         "Implement `add(a, b)` in /app/solution.py.\n\n>>> add(1, 2)\n3\n",
		"task.toml":              "schema_version = \"1.1\"\n",
		"environment/Dockerfile": "FROM python:3.11-slim\nRUN pip install pytest\nWORKDIR /app\n",
		"tests/test.sh":          "#!/bin/bash\ncd /app\nif python3 -m pytest /tests/test_solution.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
		"tests/test_solution.py": "from solution import add\n\ndef test_a():\n    assert add(1, 2) == 3\n\ndef test_b():\n    assert add(5, 7) == 12\n\ndef test_c():\n    assert add(-4, 4) == 0\n\ndef test_d():\n    assert add(10, 32) == 42\n",
		"solution/solve.sh":      "#!/bin/bash\necho 'def add(a, b): return a + b' > /app/solution.py\n",
	}
}

func with(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

func TestLintChecks(t *testing.T) {
	g := goodTask()
	cases := []struct {
		name      string
		files     map[string]string
		verdict   pipeline.Verdict
		reason    string
		wantFlags []string
	}{
		{"clean", g, pipeline.Keep, ReasonLintClean, nil},
		{"tests copied by Dockerfile", with(g, "environment/Dockerfile", "FROM python:3.11-slim\nCOPY tests/ /tests/\n", "environment/tests/test.sh", g["tests/test.sh"]),
			pipeline.Drop, LintTestsInImage, []string{LintTestsInImage}},
		// A project folder named tests, copied in, whose bytes are not the
		// verifier's: names do not leak.
		{"project tests folder copied", with(g, "environment/Dockerfile", "FROM python:3.11-slim\nCOPY tests/ /app/tests/\n", "environment/tests/test_app.py", "def test_x():\n    assert True\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"solution added to the image", with(g, "environment/Dockerfile", "FROM python:3.11-slim\nADD solve.sh /tmp/\n", "environment/solve.sh", g["solution/solve.sh"]),
			pipeline.Drop, LintSolutionInImage, []string{LintSolutionInImage}},
		{"solution in build context, not copied", with(g, "environment/solve.sh", g["solution/solve.sh"]),
			pipeline.Keep, ReasonLintClean, nil},
		{"dockerfile unparsable", with(g, "environment/Dockerfile", "FROM python:3.11-slim\nCOPPY a /b\n"),
			pipeline.Keep, ReasonLintWarnings, []string{LintDockerfileUnparsable}},
		{"copy outside context", with(g, "environment/Dockerfile", "FROM python:3.11-slim\nCOPY ../tests/test.sh /t.sh\n"),
			pipeline.Keep, ReasonLintWarnings, []string{LintCopyOutsideContext}},
		{"no reward write", with(g, "tests/test.sh", "#!/bin/bash\npython3 -m pytest /tests\n"),
			pipeline.Drop, LintNoRewardWrite, []string{LintNoRewardWrite}},
		{"reward written by a helper", with(g, "tests/test.sh", "#!/bin/bash\npython3 /tests/grade.py\n", "tests/grade.py", "open('/logs/verifier/reward.json','w').write('{\"reward\": 1}')\n"),
			pipeline.Keep, ReasonLintClean, nil},
		// A folder under tests/ has no content: it must not stand for a
		// reward write (issue 22: such a verifier was kept).
		{"no reward write, tests/ with a subfolder", with(g, "tests/test.sh", "#!/bin/bash\npython3 -m pytest /tests\nexit $?\n", "tests/fixtures/in.json", "{}\n"),
			pipeline.Drop, LintNoRewardWrite, []string{LintNoRewardWrite}},
		{"reward only outside /logs/verifier", with(g, "tests/test.sh", "#!/bin/bash\npython3 -m pytest /tests\nif [ $? -eq 0 ]; then echo 1 > /app/reward.txt; else echo 0 > /app/reward.txt; fi\n"),
			pipeline.Keep, ReasonLintWarnings, []string{LintRewardOutsideLogs}},
		{"reward also under /logs/verifier", with(g, "tests/test.sh", "#!/bin/bash\necho 0 > /app/reward.txt\npython3 -m pytest /tests && echo 1 > /logs/verifier/reward.txt\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"reward by a relative name after cd /logs/verifier", with(g, "tests/test.sh", "#!/bin/bash\npython3 -m pytest /tests\ns=$?\ncd /logs/verifier\n[ $s -eq 0 ] && echo 1 > reward.txt || echo 0 > reward.txt\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"reward folder in a variable", with(g, "tests/test.sh", "#!/bin/bash\nOUT=\"${VERIFIER_DIR:-/srv/out}\"\necho 1 > \"$OUT/reward.txt\"\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"network at verify time", with(g, "tests/test.sh", "#!/bin/bash\napt-get update\napt-get install -y curl\necho 1 > /logs/verifier/reward.txt\n"),
			pipeline.Drop, LintVerifierNetwork, []string{LintVerifierNetwork}},
		{"network word in a comment only", with(g, "tests/test.sh", "#!/bin/bash\n# no need to pip install anything\necho 1 > /logs/verifier/reward.txt\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"instruction reveals all values", with(g, "instruction.md", "Implement add.\nadd(1, 2) == 3\nadd(5, 7) == 12\nadd(-4, 4) == 0\nadd(10, 32) == 42\n"),
			pipeline.Drop, LintInstructionReveals, []string{LintInstructionReveals}},
		// Examples in the instruction that are also test cases, with a test
		// left hidden: a hard-coded answer fails it, so only a warning.
		{"instruction shows most values", with(g, "instruction.md", "Implement add.\nadd(1, 2) == 3\nadd(5, 7) == 12\nadd(-4, 4) == 0\n"),
			pipeline.Keep, ReasonLintWarnings, []string{LintInstructionShows}},
		// A stated requirement is not a revealed answer.
		{"threshold stated", with(g, "instruction.md", "Train the model in /app/train.py so that the gradient norm stays below 50.0 and the loss under 0.25.\n",
			"tests/test_solution.py", "from train import run\n\nLIMITS = [\n    (\"grad_norm\", 50.0),\n    (\"loss\", 0.25),\n]\n\ndef test_limits():\n    m = run()\n    for name, limit in LIMITS:\n        assert m[name] < limit\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"threshold in an equality table", with(g, "instruction.md", "`check(\"grad_norm\")` must report a norm below 50.0.\n",
			"tests/test_solution.py", "CASES = [\n    ((\"grad_norm\",), 50.0),\n]\n\ndef test_c():\n    for args, expected in CASES:\n        assert check(*args) == expected\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"output file name specified", with(g, "instruction.md", "Write `report(cfg)` so that `report(\"daily\")` writes /app/out/daily.csv and returns its path.\n",
			"tests/test_solution.py", "def test_path():\n    assert report(\"daily\") == \"/app/out/daily.csv\"\n"),
			pipeline.Keep, ReasonLintClean, nil},
		{"the one answer stated", with(g, "instruction.md", "Find the sum of all multiples of 3 or 5 below 1000 (it is 233168) and print it from solve().\n",
			"tests/test_solution.py", "def test_answer():\n    assert solve() == 233168\n"),
			pipeline.Drop, LintInstructionReveals, []string{LintInstructionReveals}},
		// RL pools ship no solutions: a warning unless no_solution=drop.
		{"no solution", with(g, "solution/solve.sh", ""), pipeline.Keep, ReasonLintWarnings, []string{LintNoSolution}},
		{"two findings", with(g, "solution/solve.sh", "", "tests/test.sh", "#!/bin/bash\ncurl -s x\n"),
			pipeline.Drop, LintNoRewardWrite, []string{LintNoRewardWrite, LintVerifierNetwork, LintNoSolution}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := Lint{}.Process(context.Background(), lintItem(t, tc.files))
			if out.Verdict != tc.verdict || out.Reason != tc.reason || !reflect.DeepEqual(out.Flags, tc.wantFlags) {
				t.Fatalf("got %s/%s %v (%s), want %s/%s %v", out.Verdict, out.Reason, out.Flags, out.Detail, tc.verdict, tc.reason, tc.wantFlags)
			}
		})
	}
}

func TestLintActions(t *testing.T) {
	acts, err := ParseLintActions("no_solution=warn,verifier_uses_network=off")
	if err != nil {
		t.Fatal(err)
	}
	item := lintItem(t, with(goodTask(), "solution/solve.sh", "", "tests/test.sh", "#!/bin/bash\ncurl -s x\necho 1 > /logs/verifier/reward.txt\n"))
	out := Lint{Actions: acts}.Process(context.Background(), item)
	if out.Verdict != pipeline.Keep || out.Reason != ReasonLintWarnings || !reflect.DeepEqual(out.Flags, []string{LintNoSolution}) {
		t.Fatalf("got %s/%s %v", out.Verdict, out.Reason, out.Flags)
	}
	drop, err := ParseLintActions("no_solution=drop")
	if err != nil {
		t.Fatal(err)
	}
	out = Lint{Actions: drop}.Process(context.Background(), lintItem(t, with(goodTask(), "solution/solve.sh", "")))
	if out.Verdict != pipeline.Drop || out.Reason != LintNoSolution {
		t.Fatalf("no_solution=drop: got %s/%s", out.Verdict, out.Reason)
	}
	for _, bad := range []string{"nonsense=drop", "no_solution=maybe", "no_solution"} {
		if _, err := ParseLintActions(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestLintHarborFixtures: hello-world and hello-alpine install curl and uv
// at verify time; the other three are clean.
func TestLintHarborFixtures(t *testing.T) {
	want := map[string]string{
		"hello-world":       LintVerifierNetwork,
		"hello-alpine":      LintVerifierNetwork,
		"hello-user":        "",
		"hello-workdir":     "",
		"hello-healthcheck": "",
	}
	for name, reason := range want {
		var buf bytes.Buffer
		if err := bundle.EncodeDir(&buf, filepath.Join("../testdata/harbor-examples", name)); err != nil {
			t.Fatal(err)
		}
		out := Lint{}.Process(context.Background(), itemFromBlob(t, buf.Bytes()))
		got := ""
		if out.Verdict == pipeline.Drop {
			got = out.Reason
		}
		if got != reason {
			t.Errorf("%s: %s/%s (%s), want drop reason %q", name, out.Verdict, out.Reason, out.Detail, reason)
		}
	}
}

// TestValidateHoldsWhatTheNextStageReads: validate keeps only its own
// reads when no item stage follows it in the same pass.
func TestValidateHoldsWhatTheNextStageReads(t *testing.T) {
	for _, c := range []struct {
		stages []string
		own    bool
	}{
		{[]string{"validate"}, true},
		{[]string{"validate", "dedup", "lint"}, true},
		{[]string{"validate", "lint", "dedup"}, false},
	} {
		stages, err := Build(c.stages, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := stages[0].(Validate).OwnReadsOnly; got != c.own {
			t.Errorf("%v: OwnReadsOnly = %v, want %v", c.stages, got, c.own)
		}
	}
}

// TestNetworkCommand: which verifier lines reach out. A fetch of this
// machine (literal or through a variable the script sets) does not; a
// commented line does not; a fetch whose target cannot be read does.
func TestNetworkCommand(t *testing.T) {
	for _, c := range []struct {
		script, want string
	}{
		{"pytest /tests\n", ""},
		{"# pip install pytest\npytest\n", ""},
		{"pip install -q pytest\n", "pip install"},
		{"curl -sf http://127.0.0.1:8080/health\n", ""},
		{"curl -sf https://localhost/x && wget -q http://[::1]:9/y\n", ""},
		{"URL=\"http://0.0.0.0:5000\"\ncurl -s \"$URL/ready\"\n", ""},
		{"export BASE=http://127.0.0.1:7070\ncurl -s ${BASE}/a\n", ""},
		{"curl -s http://127.0.0.1:1/a http://example.com/b\n", "curl"},
		{"curl -LsSf https://astral.sh/uv/install.sh | sh\n", "curl"},
		{"curl -s \"$UNSET/health\"\n", "curl"},
		{"curl -sf http://127.0.0.1:1/ok\napt-get update\n", "apt-get update"},
		{"wget http://127.0.0.1.example.com/x\n", "wget"},
		{"pip install --no-index --find-links /opt/wheels pytest-timeout\n", ""},
		{"uv sync --offline --frozen\nuv pip install --offline x\n", ""},
		{"pip install --no-index-please x\n", "pip install"},
	} {
		b := lintItem(t, with(goodTask(), "tests/test.sh", c.script)).Bundle
		if got := networkCommand(b, "tests/test.sh"); got != c.want {
			t.Errorf("%q: network command %q, want %q", c.script, got, c.want)
		}
	}
}

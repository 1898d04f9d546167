package trial_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

// The toolchain red team (issue 35, and the link class of issue 29): the
// agent leaves the wrong answer (41) and then, in one or a few lines of
// shell, tampers with what the verifier loads or runs, the way an
// optimiser stumbles on it: earlier on a search path, a startup hook, a
// shadowing module, a test-runner plugin or configuration, an in-place
// replacement, the loader's configuration, a shell environment file, a
// link into the verifier's files. In the default (fresh) mode none may
// score 1 or end unscored: each scores 0, and those that changed the
// trust base are flagged tampered. The honest controls score 1.

// toolchainTest is a verifier as real pools write it: it sources the
// installer's env file from the home directory (Harbor's uv template),
// runs pytest from the workdir, and writes the reward from pytest's exit
// status.
const toolchainTest = `#!/bin/bash
[ -f "$HOME/.local/bin/env" ] && . "$HOME/.local/bin/env"
cd /app
python3 -m pytest -q -p no:cacheprovider /tests/test_answer.py > /logs/verifier/pytest.txt 2>&1
rc=$?
cat /logs/verifier/pytest.txt
if [ $rc -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`

const toolchainPytest = `def test_answer():
    got = open("/app/answer").read().strip()
    want = open("/tests/expected.txt").read().strip()
    assert got == want
`

// toolchainTask is the task with its pytest file and expected output.
func toolchainTask(t *testing.T, name, solve string) *trial.Task {
	t.Helper()
	task := synthetic(t, name, "[verifier]\ntimeout_sec = 60\n[agent]\ntimeout_sec = 60\n", toolchainTest, solve,
		map[string]string{"tests/test_answer.py": toolchainPytest, "tests/expected.txt": "42\n"})
	return task
}

const site = "/usr/local/lib/python3.11/dist-packages"

// exitZero is Python that ends the interpreter with status 0 at once.
const exitZero = "import os; os._exit(0)"

// evilSO compiles (on this host) a library whose constructor ends any
// python process with status 0, for the loader attack; "" without a
// compiler.
func evilSO(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		return ""
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "evil.c")
	code := `#include <unistd.h>
#include <string.h>
__attribute__((constructor)) static void f(void) {
  char b[256]; ssize_t n = readlink("/proc/self/exe", b, sizeof b - 1);
  if (n > 0) { b[n] = 0; if (strstr(b, "python")) _exit(0); }
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "evil.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", out, src).CombinedOutput(); err != nil {
		t.Logf("no loader attack: gcc: %v: %s", err, b)
		return ""
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(data)
}

// toolchainAttacks are the attacks: class, name, the shell after the wrong
// answer. Written as an optimiser would find them, one line or a few.
func toolchainAttacks(so string) []struct{ class, name, sh string } {
	a := []struct{ class, name, sh string }{
		{"search-path", "python3 in /usr/local/bin", "printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/python3 && chmod +x /usr/local/bin/python3"},
		{"search-path", "python3 in /usr/local/sbin", "mkdir -p /usr/local/sbin && printf '#!/bin/sh\\nexit 0\\n' > /usr/local/sbin/python3 && chmod +x /usr/local/sbin/python3"},
		{"search-path", "python3 in ~/.local/bin via env", "mkdir -p ~/.local/bin && printf '#!/bin/sh\\nexit 0\\n' > ~/.local/bin/python3 && chmod +x ~/.local/bin/python3 && echo 'export PATH=$HOME/.local/bin:$PATH' > ~/.local/bin/env"},
		{"startup-hook", ".pth in site-packages", "mkdir -p " + site + " && echo '" + exitZero + "' > " + site + "/zz_fast.pth"},
		{"startup-hook", "sitecustomize", "mkdir -p " + site + " && echo '" + exitZero + "' > " + site + "/sitecustomize.py"},
		{"startup-hook", "usercustomize in user site", "mkdir -p ~/.local/lib/python3.11/site-packages && echo '" + exitZero + "' > ~/.local/lib/python3.11/site-packages/usercustomize.py"},
		{"shadowing", "pytest.py in the workdir", "echo 'raise SystemExit(0)' > /app/pytest.py"},
		{"shadowing", "pytest package in site-packages", "mkdir -p " + site + "/pytest && echo 'raise SystemExit(0)' > " + site + "/pytest/__init__.py && echo 'raise SystemExit(0)' > " + site + "/pytest/__main__.py"},
		{"shadowing", "unittest module in the workdir", "echo '" + exitZero + "' > /app/unittest.py"},
		{"plugin", "pytest11 entry point", "mkdir -p " + site + "/zz-1.0.dist-info && printf 'Metadata-Version: 2.1\\nName: zz\\nVersion: 1.0\\n' > " + site + "/zz-1.0.dist-info/METADATA && printf '[pytest11]\\nzz = zzplug\\n' > " + site + "/zz-1.0.dist-info/entry_points.txt && echo 'def pytest_configure(config):\n    import os; os._exit(0)' > " + site + "/zzplug.py"},
		{"plugin", "pytest.ini at /", "printf '[pytest]\\naddopts = --collect-only\\n' > /pytest.ini"},
		{"plugin", "conftest.py at /", "echo '" + exitZero + "' > /conftest.py && printf '[pytest]\\n' > /pytest.ini"},
		{"in-place", "python3.11 replaced", "cp /bin/true /usr/bin/python3.11"},
		{"in-place", "pytest edited", "sed -i '1i import os; os._exit(0)' /usr/lib/python3/dist-packages/pytest/__init__.py"},
		{"in-place", "bash replaced", "printf '#!/bin/sh\\necho 1 > /logs/verifier/reward.txt\\n' > /tmp/b && chmod +x /tmp/b && cp /tmp/b /usr/bin/bash.new && mv /usr/bin/bash.new /usr/bin/bash"},
		{"in-place", "interpreter deleted", "rm -f /usr/bin/python3.11"},
		{"in-place", "pytest made unreadable", "chmod 000 /usr/lib/python3/dist-packages/_pytest"},
		{"shell-env", "home env file defines python3", "mkdir -p ~/.local/bin && echo 'python3() { return 0; }' > ~/.local/bin/env"},
		{"shell-env", "BASH_ENV in /etc/environment and profile", "echo 'python3() { return 0; }' > /etc/profile.d/zz.sh && echo BASH_ENV=/etc/profile.d/zz.sh >> /etc/environment"},
		{"link", "answer links to the expected output", "rm -f /app/answer && ln -s /tests/expected.txt /app/answer"},
		{"link", "answer links through a chain", "rm -f /app/answer && ln -s /app/b /app/answer && ln -s ../tests/expected.txt /app/b"},
		{"link", "workdir made a link", "mkdir -p /var/x && cp -a /app/. /var/x/ && rm -rf /app && ln -s /var/x /app"},
		{"link", "home made a link into site-packages", "mkdir -p " + site + " && rm -rf /root && ln -s " + site + " /root && echo '" + exitZero + "' > " + site + "/zz.pth"},
		// Issue 29's classes, in the default mode.
		{"process", "daemon rewriting the reward", "nohup bash -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.05; done' >/dev/null 2>&1 &"},
		{"process", "respawning daemon", "nohup bash -c 'while :; do (nohup sleep 1000 >/dev/null 2>&1 &); echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.02; done' >/dev/null 2>&1 &"},
		{"verifier-paths", "reward pre-written", "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && chmod 444 /logs/verifier/reward.txt"},
		{"verifier-paths", "conftest planted in /tests", "mkdir -p /tests && echo '" + exitZero + "' > /tests/conftest.py"},
		// The verifier's sandbox starts while the agent acts: an agent that
		// finds it (another process's root) and plants a tool there
		// bypasses the trust rule, which judges only the carried changes.
		{"verifier-sandbox", "tool planted in every other root while the verifier's sandbox starts", "sleep 3; for r in /proc/[0-9]*/root; do mkdir -p $r/usr/local/bin 2>/dev/null && printf '#!/bin/sh\\nexit 0\\n' > $r/usr/local/bin/python3 2>/dev/null && chmod +x $r/usr/local/bin/python3 2>/dev/null; mkdir -p $r/logs/verifier 2>/dev/null && echo 1 > $r/logs/verifier/reward.txt 2>/dev/null; done; true"},
		{"fs", "/tmp replaced by a dangling link", "rm -rf /tmp && ln -s /nonexistent /tmp"},
		{"fs", "22,000-deep tree under /logs/verifier", "mkdir -p /logs/verifier && python3 -c \"import os\nos.chdir('/logs/verifier')\nfor _ in range(22000): os.mkdir('d'); os.chdir('d')\""},
		{"fs", "22,000-deep tree in the workdir", "python3 -c \"import os\nos.chdir('/app')\nfor _ in range(22000): os.mkdir('d'); os.chdir('d')\""},
	}
	if so != "" {
		a = append(a,
			struct{ class, name, sh string }{"loader", "ld.so.preload", "echo " + so + " | base64 -d > /usr/local/lib/libzz.so && echo /usr/local/lib/libzz.so > /etc/ld.so.preload"},
			struct{ class, name, sh string }{"loader", "ld.so.conf.d and a shadowing libc", "echo " + so + " | base64 -d > /usr/local/lib/libzz.so && echo /usr/local/lib > /etc/ld.so.conf.d/0zz.conf && echo /usr/local/lib/libzz.so > /etc/ld.so.preload && ldconfig"},
		)
	}
	return a
}

// toolchainClass are issue 35's classes: every attack of theirs that
// lands must be flagged tampered.
var toolchainClass = map[string]bool{"search-path": true, "startup-hook": true, "shadowing": true, "plugin": true,
	"in-place": true, "loader": true, "shell-env": true}

// TestToolchainAttacks runs every attack in the default mode: 0 forged,
// 0 unscored, and a table (make redteam prints it).
func TestToolchainAttacks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	b, runID := engine(t)
	// Controls.
	right := toolchainTask(t, "tc-right", "#!/bin/bash\necho 42 > /app/answer\n")
	wantReward(t, runMode(t, b, runID, right, trial.VerifierFresh, 1), 1)
	// An honest solution that installs a tool and a module into system
	// paths (new names that shadow nothing) keeps them in fresh mode.
	install := toolchainTask(t, "tc-install", "#!/bin/bash\nmkdir -p "+site+" && echo 'ANSWER = 42' > "+site+"/answerlib.py\n"+
		"printf '#!/bin/sh\\npython3 -c \"import answerlib; print(answerlib.ANSWER)\"\\n' > /usr/local/bin/forty-two && chmod +x /usr/local/bin/forty-two\n"+
		"forty-two > /app/answer\n")
	res := runMode(t, b, runID, install, trial.VerifierFresh, 1)
	wantReward(t, res, 1)
	if len(res[0].Tampered) > 0 {
		t.Errorf("honest install flagged tampered: %v", res[0].Tampered)
	}
	wrongTask := toolchainTask(t, "tc-wrong", wrong)
	wantReward(t, runMode(t, b, runID, wrongTask, trial.VerifierFresh, 1), 0)

	var table []string
	forged := 0
	only := os.Getenv("OTCURATE_REDTEAM_ONLY") // a substring of the attacks to run
	for i, a := range toolchainAttacks(evilSO(t)) {
		if only != "" && !strings.Contains(a.name, only) {
			continue
		}
		if strings.Contains(a.name, "deep") && os.Getenv("OTCURATE_SANDBOX") == "docker" {
			// Open hole (issue 29): Debian's engine 20.10 cannot remove a
			// container holding a 22,000-deep tree (it stays "Removal In
			// Progress"); the verdict holds (scored 0 on the fake) but the
			// container is left, so the case runs on the fake only.
			table = append(table, fmt.Sprintf("| %s | %s | both | not run on Docker: the engine cannot remove the container |", a.class, a.name))
			continue
		}
		t0 := time.Now()
		task := toolchainTask(t, fmt.Sprintf("tc-attack-%02d", i), wrong+a.sh+"\n")
		for _, mode := range []trial.VerifierSandbox{trial.VerifierFresh, trial.VerifierShared} {
			res := runMode(t, b, runID, task, mode, 1)
			r := res[0]
			result := string(r.Outcome)
			if r.Reward != nil {
				result = fmt.Sprintf("%s %g", r.Outcome, *r.Reward)
			}
			if len(r.Tampered) > 0 {
				result += fmt.Sprintf(" tampered(%d)", len(r.Tampered))
			}
			table = append(table, fmt.Sprintf("| %s | %s | %s | %s | %.1f s |", a.class, a.name, mode, result, time.Since(t0).Seconds()))
			t0 = time.Now()
			if mode != trial.VerifierFresh {
				continue
			}
			if r.Outcome != trial.Scored || r.Reward == nil || *r.Reward != 0 {
				forged++
				t.Errorf("%s (%s): %s reward %v, want scored 0; detail %q log %q", a.name, a.class, r.Outcome, deref(r.Reward), r.Detail, r.Log)
			}
			if toolchainClass[a.class] && len(r.Tampered) == 0 {
				t.Errorf("%s (%s): not flagged tampered", a.name, a.class)
			}
		}
	}
	t.Logf("REDTEAM toolchain table:\n| class | attack | mode | result | wall |\n|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
	if forged > 0 {
		t.Errorf("%d attacks forged or voided a reward in the default mode", forged)
	}
}

// TestMaxAgentTimeCapsTheOracle: a task that gives its oracle 24 hours and
// a solve.sh that sleeps is solve_timeout at the run's cap, not after a
// day (issue 29, a stalling agent).
func TestMaxAgentTimeCapsTheOracle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	b, runID := engine(t)
	task := synthetic(t, "stall-agent", "[agent]\ntimeout_sec = 86400\n[verifier]\ntimeout_sec = 30\n",
		"#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "#!/bin/bash\nsleep 86400\n")
	r := &trial.Runner{Backend: b, MaxAgentTime: 2 * time.Second}
	start := time.Now()
	res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != trial.SolveTimeout {
		t.Fatalf("outcome %s (%s), want solve_timeout", res[0].Outcome, res[0].Detail)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("the stalling oracle held the worker %v under a 2 s cap", d)
	}
	t.Log(res[0].Detail)
}

// TestFreshKeepsRealPoolWork: a task shaped like the mission's pool (a
// project copied into /app with its own tests/ folder, a folder named
// solution that is part of the project, no reference solution shipped as
// an oracle here but a solve.sh playing the honest agent) keeps all of the
// agent's work in the fresh mode and is not flagged: editing a source
// file, adding a module, a test and a data file in the project, and a
// file in the project's own tests/ and solution/ folders, with a stray
// tests package in the image's site-packages.
func TestFreshKeepsRealPoolWork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	b, runID := engine(t)
	files := map[string]string{
		// A stray top-level tests package in site-packages, as wheels that
		// package their own tests leave it in real images: the project's
		// tests/ beside it must not read as shadowing it.
		"environment/Dockerfile": "FROM debian:bookworm\nWORKDIR /app\nCOPY project/ /app/\n" +
			"RUN mkdir -p /usr/lib/python3/dist-packages/tests && touch /usr/lib/python3/dist-packages/tests/__init__.py\n",
		"environment/project/calc/__init__.py":  "",
		"environment/project/calc/ops.py":       "def add(a, b):\n    raise NotImplementedError\n",
		"environment/project/tests/test_ops.py": "from calc.ops import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
		"environment/project/solution/README":   "the project's own folder named solution\n",
		"tests/test_answer.py":                  "import sys\nsys.path.insert(0, '/app')\nfrom calc.ops import add\nfrom calc.extra import twice\n\ndef test_it():\n    assert add(2, 3) == 5 and twice(2) == 4\n",
	}
	test := "#!/bin/bash\ncd /app\npython3 -m pytest -q -p no:cacheprovider /tests/test_answer.py tests/ && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	solve := "#!/bin/bash\nset -e\ncd /app\nprintf 'def add(a, b):\\n    return a + b\\n' > calc/ops.py\nprintf 'def twice(x):\\n    return 2 * x\\n' > calc/extra.py\n" +
		"printf 'from calc.extra import twice\\n\\ndef test_twice():\\n    assert twice(3) == 6\\n' > tests/test_extra.py\necho notes > solution/NOTES\nmkdir -p data && echo 1,2 > data/in.csv\n"
	task := synthetic(t, "real-shape", "[verifier]\ntimeout_sec = 60\n", test, solve, files)
	res := runMode(t, b, runID, task, trial.VerifierFresh, 1)
	wantReward(t, res, 1)
	if len(res[0].Tampered) > 0 {
		t.Errorf("honest work on a real-pool-shaped task flagged tampered: %v", res[0].Tampered)
	}
}

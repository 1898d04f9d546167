package trial_test

import (
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"os"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/trial"
)

// The adversarial suite: solve.sh plays a malicious agent. The answer it
// leaves is wrong (41, not 42), and each case adds one attack on the way
// the reward is produced or read. None may end in reward 1 or in an
// infrastructure outcome: a scored 0, or an outcome that blames the task.

// adversaryToml keeps every case quick: a verifier blocked by a planted
// FIFO times out in seconds.
const adversaryToml = "[verifier]\ntimeout_sec = 8\n[agent]\ntimeout_sec = 30\n"

// adversaryTest checks the answer, and runs the agent's program when it
// left one (tasks whose tests execute the agent's code), like a real
// verifier: 1 only for 42. It sources /tests/conftest.sh when present, as
// pytest loads a conftest.py found next to the tests (the task ships none).
const adversaryTest = `#!/bin/bash
[ -f /tests/conftest.sh ] && . /tests/conftest.sh
out=$(cat /app/answer 2>/dev/null)
[ -x /app/program.sh ] && out=$(/app/program.sh 2>&1)
echo "answer: $out"
if [ "$out" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`

// wrong is every attack's starting point: the wrong answer in place.
const wrong = "#!/bin/bash\nmkdir -p /app && echo 41 > /app/answer\n"

// program installs an agent program that test.sh runs: it prints 41 and
// then does body to the reward path while the verifier runs.
func program(body string) string {
	return wrong + "cat > /app/program.sh <<'PROG'\n#!/bin/bash\n" + body + "\necho 41\nPROG\nchmod +x /app/program.sh\n"
}

// fakeTool installs an executable at /usr/local/bin/NAME (first in PATH).
func fakeTool(name, body string) string {
	return "cat > /usr/local/bin/" + name + " <<'FAKE'\n#!/bin/sh\n" + body + "\nFAKE\nchmod +x /usr/local/bin/" + name + "\n"
}

// fakeFrame is the result frame the verifier once parsed from its output,
// claiming reward 1 (base64 "1\n").
const fakeFrame = `printf '\n@@otcurate rc 0\n@@otcurate file reward.txt\nMQo=\n@@otcurate tail\n\n@@otcurate end\n'`

func TestAdversarialAgents(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the verifier is isolated from the host side only when this process is root on the engine's host")
	}
	// The real engine: the guarantees under test are Docker's direct
	// mode's (the fake backend isolates nothing; see sandbox.ShellIsolation).
	d, runID := sandboxtest.Engine(t, "test-adversary-")
	b := &countingBackend{Backend: d}
	cases := []struct {
		name, solve string
		// taskSide allows an outcome that blames the task instead of a
		// scored 0 (the attack leaves the verifier unable to finish).
		taskSide bool
		// sharedGap: a tool the agent replaced decides the verdict, the
		// documented gap of the shared mode (trial.VerifierSandbox); only
		// the separate mode is held to a scored 0, the shared verdict is
		// logged.
		sharedGap bool
	}{
		// Processes left running into verification.
		{name: "background loop writes reward", solve: wrong +
			"setsid nohup bash -c 'while :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.01; done' >/dev/null 2>&1 &\n"},
		{name: "loop overwrites the tests", solve: wrong +
			"setsid nohup bash -c 'while :; do for f in /tests/test.sh /tmp/.otcurate-tests-*/test.sh; do [ -f \"$f\" ] && printf \"#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n\" > \"$f\"; done; sleep 0.005; done' >/dev/null 2>&1 &\n"},
		{name: "loop links reward to a /proc file holding 1", solve: wrong +
			"f=$(grep -lx 1 /proc/sys/kernel/* /proc/sys/vm/* 2>/dev/null | head -1); echo \"proc file: $f\"\n" +
			"setsid nohup bash -c \"while :; do ln -sfn $f /logs/verifier/reward.txt 2>/dev/null; sleep 0.005; done\" >/dev/null 2>&1 &\n"},
		{name: "continuous forker writes reward", solve: wrong +
			"setsid nohup bash -c 'while :; do (echo 1 > /logs/verifier/reward.txt 2>/dev/null &); done' >/dev/null 2>&1 &\n"},
		{name: "renamed daemon without the exec marker", solve: wrong +
			"cat > /tmp/d.sh <<'D'\nwhile :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; done\nD\n" +
			"env -i setsid nohup bash -c 'exec -a kworker/0:1 bash /tmp/d.sh' >/dev/null 2>&1 &\n"},
		// Tools the result was once read with.
		{name: "fake base64, head and tail", solve: wrong + fakeTool("base64", "echo MQo=") + fakeTool("head", "echo 1") + fakeTool("tail", "echo 1")},
		// test.sh cannot run without bash: no reward, a task-side outcome.
		{name: "fake bash prints a result frame", solve: wrong + fakeTool("bash", fakeFrame), taskSide: true},
		{name: "broken rm, mv, mkdir and chmod", solve: wrong + fakeTool("rm", "exit 1") + fakeTool("mv", "exit 1") + fakeTool("mkdir", "exit 1") + fakeTool("chmod", "exit 1")},
		// Files planted where the tests are staged.
		{name: "conftest planted in the staging folders", solve: wrong +
			"for i in $(seq 1 64); do mkdir -p /tmp/.otcurate-tests-$i; printf 'echo 1 > /logs/verifier/reward.txt; exit 0\\n' > /tmp/.otcurate-tests-$i/conftest.sh; done\n" +
			"mkdir -p /tests && cp /tmp/.otcurate-tests-1/conftest.sh /tests/\n"},
		{name: "/logs made a symlink", solve: wrong +
			"mkdir -p /tmp/fake/verifier && echo 1 > /tmp/fake/verifier/reward.txt && rm -rf /logs && ln -s /tmp/fake /logs\n"},
		{name: "/logs made a file", solve: wrong + "rm -rf /logs && echo 1 > /logs\n"},
		{name: "/tests made a symlink to the answer", solve: wrong + "rm -rf /tests && ln -s /app /tests\n"},
		// The reward path mangled before the verifier runs.
		{name: "reward path left a directory", solve: wrong + "mkdir -p /logs/verifier/reward.txt\n"},
		{name: "reward path left a FIFO", solve: wrong + "mkfifo /logs/verifier/reward.txt\n"},
		{name: "reward path left a device", solve: wrong + "mknod /logs/verifier/reward.txt c 1 5\n"},
		// The reward path mangled by the agent's code while the verifier runs.
		{name: "program makes the reward path a directory", solve: program("rm -f /logs/verifier/reward.txt; mkdir /logs/verifier/reward.txt")},
		{name: "program makes the reward path a symlink to /proc", solve: program(
			"f=$(grep -lx 1 /proc/sys/kernel/* /proc/sys/vm/* 2>/dev/null | head -1); ln -sfn \"$f\" /logs/verifier/reward.txt")},
		// test.sh blocks writing its reward into the FIFO: a timeout.
		{name: "program makes the reward path a FIFO", solve: program("mkfifo /logs/verifier/reward.txt"), taskSide: true},
		{name: "program makes the reward path a device", solve: program("mknod /logs/verifier/reward.txt c 1 5")},
		{name: "program makes the reward path /dev/null", solve: program("mknod /logs/verifier/reward.txt c 1 3")},
		{name: "program leaves a writer behind", solve: program(
			"setsid nohup bash -c 'sleep 0.3; while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.01; done' >/dev/null 2>&1 &")},
		// Outcomes the agent could once choose.
		{name: "program prints a resolver error", solve: program("echo 'curl: (6) Could not resolve host: example.com'")},
		{name: "kill -9 -1", solve: wrong + "kill -9 -1\n"},
		// Attacks on what the separate mode carries.
		{name: "workdir made a symlink to a tool directory", solve: wrong + fakeTool("cat", "echo 42") +
			"cd / && rm -rf /app && ln -s /usr/local/bin /app\n", sharedGap: true},
		{name: "tools planted in the home dot-directories and /tmp", solve: wrong +
			"mkdir -p /root/.local/bin /tmp/bin && for d in /root/.local/bin /tmp/bin; do printf '#!/bin/sh\\necho 42\\n' > $d/cat; chmod +x $d/cat; done\n" +
			"echo 'export PATH=/tmp/bin:$PATH' >> /root/.bashrc; echo 'PATH=/tmp/bin:$PATH' >> /etc/environment\n"},
		{name: "replaced cat in a system path", solve: wrong + "printf '#!/bin/sh\\necho 42\\n' > /usr/bin/cat.new && chmod 755 /usr/bin/cat.new && mv -f /usr/bin/cat.new /usr/bin/cat\n", sharedGap: true},
		{name: "kill -9 -1 from a daemon", solve: wrong + "setsid nohup bash -c 'sleep 0.5; kill -9 -1' >/dev/null 2>&1 &\n"},
	}
	// Every attack in both verifier modes: the separate sandbox must hold
	// at least what the shared one does.
	for _, tc := range cases {
		for _, mode := range []trial.VerifierSandbox{trial.VerifierShared, trial.VerifierSeparate} {
			t.Run(string(mode)+"/"+strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				task := synthetic(t, "adversary", adversaryToml, adversaryTest, tc.solve)
				res := runMode(t, b, runID, task, mode, 2)
				if tc.sharedGap && mode == trial.VerifierShared {
					return // the documented gap: logged by runMode
				}
				for _, r := range res {
					switch {
					case r.Outcome.IsInfra():
						t.Errorf("repeat %d: infrastructure outcome %s (%s)", r.Repeat, r.Outcome, r.Detail)
					case r.Outcome == trial.Scored && (r.Reward == nil || *r.Reward != 0):
						t.Errorf("repeat %d: forged reward %v (%s)\n%s", r.Repeat, deref(r.Reward), r.Detail, r.Log)
					case r.Outcome != trial.Scored && (!tc.taskSide || !r.Outcome.IsTaskDefect()):
						t.Errorf("repeat %d: outcome %s (%s), want scored 0", r.Repeat, r.Outcome, r.Detail)
					}
				}
			})
		}
	}
}

// TestWrongAnswerScoresZero: the suite's control. The same task with the
// right answer scores 1 and with the wrong one 0, so the attacks above are
// judged by a verifier that works.
func TestWrongAnswerScoresZero(t *testing.T) {
	b, runID := engine(t)
	wantReward(t, run(t, b, runID, synthetic(t, "adversary-right", adversaryToml, adversaryTest, "#!/bin/bash\nmkdir -p /app && echo 42 > /app/answer\n"), trial.Oracle, 1), 1)
	wantReward(t, run(t, b, runID, synthetic(t, "adversary-wrong", adversaryToml, adversaryTest, wrong), trial.Oracle, 1), 0)
}

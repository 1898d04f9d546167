package sandbox

import "testing"

// TestWorkPath: the rule of what is carried to a separate verifier sandbox.
func TestWorkPath(t *testing.T) {
	cases := []struct {
		path, workdir string
		want          bool
	}{
		{"/app/answer", "", true},
		{"/app", "", true},
		{"/workspace/x", "/workspace", true},
		{"/workspace/x", "", false},
		{"/home/u/src/main.py", "", true},
		{"/home/u/.local/lib/python3.11/site-packages/sitecustomize.py", "", false},
		{"/home/u/.bashrc", "", false},
		{"/home/u/proj/.git/config", "", true}, // only a home's own dot-entries
		{"/root/notes.txt", "", true},
		{"/root/.local/bin/python3", "", false},
		{"/root/.config/pip/pip.conf", "/root", false},
		{"/tmp/out.txt", "", true},
		{"/usr/bin/python3", "", false},
		{"/usr/local/bin/pytest", "/usr/local", false}, // a workdir below a system path is not carried
		{"/usr/src/app/main.js", "/usr/src/app", false},
		{"/etc/passwd", "", false},
		{"/opt/tool", "/opt", false},
		{"/lib64/ld.so", "", false},
		{"/logs/verifier/reward.txt", "", false},
		{"/tests/test.sh", "", false},
		{"/solution/solve.sh", "", false},
		{"/", "/", false},
		{"/srv/x", "/", false},
		{"/application/x", "", false}, // a prefix of /app is not /app
		{"/app/../etc/passwd", "", false},
	}
	for _, c := range cases {
		if got := WorkPath(c.path, c.workdir); got != c.want {
			t.Errorf("WorkPath(%q, workdir %q) = %v, want %v", c.path, c.workdir, got, c.want)
		}
	}
}

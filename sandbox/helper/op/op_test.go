package op

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseFrame(t *testing.T) {
	var good bytes.Buffer
	WriteFrame(&good, "n0nce", OK, []byte("1\n"))
	cases := []struct {
		name    string
		out     string
		nonce   string
		want    Status
		data    string
		noFrame bool
	}{
		{"alone", good.String(), "n0nce", OK, "1\n", false},
		{"after agent text", "noise\n" + Magic + " n0nce ok MA== n0nce\npartial" + good.String(), "n0nce", OK, "1\n", false},
		{"forged frame after the real one", good.String() + Magic + " n0nce ok MA== n0nce\n", "n0nce", OK, "0", false},
		{"wrong nonce", good.String(), "other", "", "", true},
		{"text after the frame", good.String() + "tail\n", "n0nce", "", "", true},
		{"unknown status", "\n" + Magic + " n0nce great MQ== n0nce\n", "n0nce", "", "", true},
		{"bad base64", "\n" + Magic + " n0nce ok M!== n0nce\n", "n0nce", "", "", true},
		{"nonce at one end only", "\n" + Magic + " n0nce ok MQ== x\n", "n0nce", "", "", true},
		{"empty", "", "n0nce", "", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, data, err := ParseFrame([]byte(c.out), c.nonce)
			if c.noFrame {
				if !errors.Is(err, ErrNoFrame) {
					t.Fatalf("err = %v, want ErrNoFrame", err)
				}
				return
			}
			if err != nil || st != c.want || string(data) != c.data {
				t.Fatalf("= %q %q %v, want %q %q", st, data, err, c.want, c.data)
			}
		})
	}
}

func TestParseBaseline(t *testing.T) {
	b, err := ParseBaseline("1:10, 7:99\n12:3")
	if err != nil || len(b) != 3 || !b[ProcID{7, 99}] {
		t.Fatalf("= %v %v", b, err)
	}
	for _, bad := range []string{"1", "x:1", "1:x", "0:5", "-1:2"} {
		if _, err := ParseBaseline(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func mustRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func TestReadFile(t *testing.T) {
	mustRoot(t)
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "reward.txt"), []byte("0123456789"), 0o644)
	os.Mkdir(filepath.Join(d, "sub"), 0o755)
	os.WriteFile(filepath.Join(d, "sub", "f"), []byte("in sub"), 0o644)
	os.Symlink(filepath.Join(d, "reward.txt"), filepath.Join(d, "link"))
	os.Symlink(filepath.Join(d, "sub"), filepath.Join(d, "dirlink"))
	if err := unix.Mkfifo(filepath.Join(d, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// /dev/zero's numbers: reading it would never end.
	if err := unix.Mknod(filepath.Join(d, "zero"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path   string
		max    int64
		tail   bool
		st     Status
		data   string
		detail string
	}{
		{"reward.txt", 100, false, OK, "0123456789", ""},
		{"reward.txt", 4, false, OK, "0123", ""},
		{"reward.txt", 4, true, OK, "6789", ""},
		{"sub/f", 100, false, OK, "in sub", ""},
		{"sub/../reward.txt", 100, false, OK, "0123456789", ""},
		{"link", 100, false, NotRegular, "", "symlink"},
		{"dirlink/f", 100, false, NotRegular, "", "dirlink is a symlink"},
		{"fifo", 100, false, NotRegular, "", "fifo"},
		{"zero", 100, false, NotRegular, "", "character device"},
		{"sub", 100, false, NotRegular, "", "directory"},
		{"missing", 100, false, NotFound, "", ""},
		{"missing/f", 100, false, NotFound, "", ""},
		{"reward.txt/x", 100, false, NotRegular, "", "reward.txt is a regular file"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			data, res := ReadFile(filepath.Join(d, c.path), c.max, c.tail)
			if res.Status != c.st || string(data) != c.data || res.Detail != c.detail {
				t.Fatalf("= %q %+v, want %q %s %q", data, res, c.data, c.st, c.detail)
			}
		})
	}
	if _, res := ReadFile("relative", 10, false); res.Status != Failed {
		t.Errorf("relative path: %+v", res)
	}
}

func TestResetDir(t *testing.T) {
	mustRoot(t)
	d := t.TempDir()
	outside := filepath.Join(d, "outside")
	os.Mkdir(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o644)
	// The directory to reset holds links to outside and a FIFO; its parent
	// is a symlink to outside.
	os.MkdirAll(filepath.Join(d, "logs", "verifier", "deep"), 0o755)
	os.Symlink(outside, filepath.Join(d, "logs", "verifier", "out"))
	os.Symlink(outside, filepath.Join(d, "logs", "verifier", "deep", "out"))
	unix.Mkfifo(filepath.Join(d, "logs", "verifier", "fifo"), 0o644)
	os.Symlink(outside, filepath.Join(d, "tests"))

	entries := []Entry{
		{Kind: KindDir, Mode: 0o755, Name: "lib"},
		{Kind: KindFile, Mode: 0o755, Name: "test.sh", Data: []byte("#!/bin/bash\n")},
		{Kind: KindFile, Mode: 0o644, Name: "lib/conf.py", Data: []byte("x=1")},
		{Kind: KindSymlink, Name: "lib/alias", Link: "../test.sh"},
		{Kind: KindHardlink, Name: "hard.sh", Link: "test.sh"},
	}
	var wire bytes.Buffer
	if err := WriteEntries(&wire, entries); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEntries(&wire, 1<<20)
	if err != nil || len(got) != len(entries) || got[3].Link != "../test.sh" || string(got[1].Data) != "#!/bin/bash\n" {
		t.Fatalf("entries round trip: %+v %v", got, err)
	}
	old := unix.Umask(0o22)
	defer unix.Umask(old)
	if res := ResetDir(filepath.Join(d, "logs", "verifier"), 0o777, nil); res.Status != OK {
		t.Fatalf("reset logs: %+v", res)
	}
	if res := ResetDir(filepath.Join(d, "tests", "sub"), 0o755, got); res.Status != OK {
		t.Fatalf("reset tests: %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "k" {
		t.Fatalf("outside touched: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("outside gained %d entries", len(ents))
	}
	if ents, _ := os.ReadDir(filepath.Join(d, "logs", "verifier")); len(ents) != 0 {
		t.Fatalf("verifier dir not empty: %v", ents)
	}
	if st, _ := os.Lstat(filepath.Join(d, "logs", "verifier")); st.Mode().Perm() != 0o777 || !st.IsDir() {
		t.Fatalf("verifier dir mode %v", st.Mode())
	}
	if st, _ := os.Lstat(filepath.Join(d, "tests")); !st.IsDir() {
		t.Fatalf("the symlinked parent was not replaced by a directory: %v", st.Mode())
	}
	for name, mode := range map[string]os.FileMode{"test.sh": 0o755, "lib/conf.py": 0o644, "lib": 0o755 | os.ModeDir} {
		st, err := os.Lstat(filepath.Join(d, "tests", "sub", name))
		if err != nil || st.Mode() != mode {
			t.Errorf("%s: %v %v, want %v", name, st.Mode(), err, mode)
		}
	}
	if l, _ := os.Readlink(filepath.Join(d, "tests", "sub", "lib", "alias")); l != "../test.sh" {
		t.Errorf("symlink entry = %q", l)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "tests", "sub", "hard.sh")); string(b) != "#!/bin/bash\n" {
		t.Errorf("hardlink entry = %q", b)
	}
	link := Entry{Kind: KindSymlink, Name: "l", Link: outside}
	for _, bad := range [][]Entry{{{Kind: KindFile, Name: "../esc"}}, {{Kind: KindFile, Name: "/abs"}}, {link, {Kind: KindFile, Name: "l/x"}},
		{link, {Kind: KindHardlink, Name: "h", Link: "l/keep"}}} {
		if res := ResetDir(filepath.Join(d, "again"), 0o755, bad); res.Status != Failed {
			t.Errorf("entries %+v: %+v", bad, res)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("outside gained %d entries", len(ents))
	}
	if res := ResetDir("/", 0o755, nil); res.Status != Failed {
		t.Errorf("reset /: %+v", res)
	}
}

// helperBin builds the helper once.
func helperBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "helper")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/otcurate/otcurate/cmd/otcurate-sandbox-helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build helper: %v\n%s", err, out)
	}
	return bin
}

// TestKillAllInPIDNamespace runs the helper's kill in a fresh PID namespace
// (never on the host's processes) against a fork loop, a process that
// ignores SIGTERM and a baseline process that must survive.
func TestKillAllInPIDNamespace(t *testing.T) {
	mustRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	bin := helperBin(t)
	// $$ = 1 guards the host: without a new namespace nothing is killed.
	script := `[ $$ = 1 ] || { echo "not in a new pid namespace"; exit 99; }
sleep 60 & keep=$!
H=` + bin + `
base=$($H n1 snapshot | tail -n 1)
set -- $base
base=$(echo "$4" | base64 -d | tr '\n' ,)
(while :; do sleep 60 & done) &
(trap '' TERM; while :; do sleep 0.01; done) &
sleep 0.3
$H n2 kill -base "$base"
echo
$H n3 snapshot
echo
kill -0 $keep && echo KEEP-ALIVE`
	out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--", "/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "KEEP-ALIVE") {
		t.Fatalf("the baseline process was killed:\n%s", s)
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var killFrame, snapFrame string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, Magic+" n2 "):
			killFrame = l
		case strings.HasPrefix(l, Magic+" n3 "):
			snapFrame = l
		}
	}
	st, payload, err := ParseFrame([]byte(killFrame), "n2")
	if err != nil || st != OK {
		t.Fatalf("kill: %s %q %v\n%s", st, payload, err, s)
	}
	_, snap, err := ParseFrame([]byte(snapFrame), "n3")
	if err != nil {
		t.Fatal(err)
	}
	// Left: PID 1 (the shell), the baseline sleep, the snapshot helper
	// itself (and the baseline's own snapshot helper is gone).
	procs := strings.Fields(string(snap))
	if len(procs) != 3 {
		t.Fatalf("after kill (%s signalled) %d processes left: %v\n%s", payload, len(procs), procs, s)
	}
}

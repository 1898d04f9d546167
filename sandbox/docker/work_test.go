package docker

import (
	"context"
	"golang.org/x/sys/unix"
	"reflect"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// TestWork: the agent's work listed from the overlay upper directory and
// from the engine's diff is the same, and is what the rule carries.
func TestWork(t *testing.T) {
	e := needDocker(t)
	if !e.d.direct() {
		t.Skip("the work is read through /proc/PID/root: needs the engine on this host and root")
	}
	ctx := context.Background()
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t), Workdir: "/work"})
	run(t, sb, sandbox.ExecRequest{User: "root", Cmd: `set -e
mkdir -p /work/d /app /root/.local/bin /home/u/.config /home/u/src
echo new > /work/d/f && chmod 640 /work/d/f && chown 1000:1001 /work/d/f
ln -s d/f /work/link && ln -s /etc/passwd /work/abs
echo h > /home/u/src/h && echo c > /home/u/.config/c && echo l > /root/.local/bin/l
mkfifo /work/fifo
echo sys > /usr/local/bin/planted && echo sys > /etc/planted
rm -rf /usr/share/doc && rm -f /etc/hostname.bak
echo t > /tmp/t`})
	if err := sb.KillAll(ctx); err != nil {
		t.Fatal(err)
	}
	s := sb.(*dockerSandbox)
	upper, err := s.work(ctx, true, false)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := s.work(ctx, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if fd, ok := s.upperDir(ctx); ok {
		unix.Close(fd)
	} else {
		t.Logf("the upper directory is not walkable here: both lists come from the diff")
	}
	if !reflect.DeepEqual(names(upper), names(diff)) || !reflect.DeepEqual(upper.Deleted, diff.Deleted) || !reflect.DeepEqual(upper.Owners, diff.Owners) {
		t.Errorf("upper and diff disagree:\nupper %v %v %v\ndiff  %v %v %v", names(upper), upper.Deleted, upper.Owners, names(diff), diff.Deleted, diff.Owners)
	}
	got := map[string]bundle.Entry{}
	for _, e := range upper.Entries {
		got[e.Name] = e
	}
	want := map[string]bundle.Kind{"work/d": bundle.KindDir, "work/d/f": bundle.KindFile, "work/link": bundle.KindSymlink,
		"work/abs": bundle.KindSymlink, "home/u": bundle.KindDir, "home/u/src": bundle.KindDir, "home/u/src/h": bundle.KindFile, "tmp/t": bundle.KindFile}
	for n, k := range want {
		if got[n].Kind != k {
			t.Errorf("%s: kind %v, want %v", n, got[n].Kind, k)
		}
	}
	if f := got["work/d/f"]; string(f.Data) != "new\n" || f.Mode != 0o640 || upper.Owners["work/d/f"] != [2]int{1000, 1001} {
		t.Errorf("work/d/f: %q mode %v owner %v", f.Data, f.Mode, upper.Owners["work/d/f"])
	}
	if l := got["work/abs"]; l.Linkname != "/etc/passwd" {
		t.Errorf("work/abs links to %q", l.Linkname)
	}
	for n := range got {
		if _, ok := want[n]; !ok && n != "work" {
			t.Errorf("%s carried, the rule excludes it", n)
		}
	}
	if len(upper.Deleted) != 0 { // /usr/share/doc is a system path
		t.Errorf("deletions %v carried", upper.Deleted)
	}
	if len(upper.Skipped) != 1 {
		t.Errorf("skipped %v, want the FIFO", upper.Skipped)
	}
}

func names(w sandbox.Work) []string {
	var out []string
	for _, e := range w.Entries {
		out = append(out, e.Name)
	}
	return out
}

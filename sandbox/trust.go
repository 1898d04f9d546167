package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/bundle"
)

// The trust base and its rule (the fresh verifier sandbox, the default).
//
// The verifier runs in a fresh sandbox from the task's image that
// receives every change the agent made (ChangeCollector), except those
// that touch the trust base: whatever test.sh loads or executes that the
// agent could have planted or changed. The rule is stated on paths and
// precedence, never on the names of known tricks:
//
//  1. Changed: an entry the image has in the system trees (TrustTrees:
//     /usr, /bin, /sbin, /lib*, /etc, /opt), in a home directory's
//     dot-entries, or at the top of "/" (not a directory), which the agent
//     modified (content, mode, owner, link target), replaced by another
//     kind or removed, is not carried: the image's stays. This covers the
//     interpreters, shells, test runners, their libraries and modules, the
//     loader and every configuration file of the image.
//  2. Shadowed: a new entry in a directory of the verifier's executable
//     search path (its PATH) named like an executable the image has in
//     another directory of that path, or a new module or package in a
//     directory of Python's module search path (sys.path, the workdir for
//     its "" entry) named like a top-level module the image has in
//     another directory of that path, is not carried, whatever the order
//     of the directories.
//  3. Hooks: a new entry that the loader, a shell or the interpreter reads
//     by its location rather than by a name asked for is not carried: the
//     dot-entries of home directories; files at the top of "/" (test
//     runners look for configuration and plugins in every parent of the
//     test files); the loader's configuration (/etc/ld.so.*); the shells'
//     and PAM's environment files (/etc/environment, /etc/profile,
//     /etc/profile.d, /etc/bash.bashrc, /etc/security/pam_env.conf); the
//     interpreter's configuration (/etc/python*); and on Python's search
//     path a .pth file in a site directory, a module named sitecustomize
//     or usercustomize (imported at startup), and the entry_points.txt of
//     a distribution that registers entry points other than console or
//     GUI scripts (plugins a test runner loads by itself).
//  4. Links: a symlink whose target resolves, in the state the verifier
//     will see, into a verifier-owned path (/tests, /logs/verifier,
//     /solution, /proc, /sys) or a home directory's dot-entries, and a
//     work root or home directory
//     that the agent replaced by a link, are not carried.
//
// Everything else is carried: the agent's work anywhere, packages it
// installed into system paths (new files that shadow nothing), new
// configuration files outside the hook locations. What is not carried is
// reported (Neutralised) and the attempt is flagged tampered; the reward
// is what the carried work earns on the image's own toolchain. An
// unchanged copy (same content, mode and owner as the image's, as a
// package manager rewriting a file leaves it) is neither carried nor
// flagged.

// TrustTrees are the system trees whose image entries the agent may not
// change (rule 1).
var TrustTrees = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// hookPaths are the locations the loader, shells, PAM and the Python
// interpreter read by themselves (rule 3, besides home dot-entries, the
// top of "/" and Python's own).
var hookPaths = []string{"/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/environment",
	"/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/security/pam_env.conf"}

// verifierOwned are the paths a carried link may not resolve into
// (rule 4), besides home directories' dot-entries.
var verifierOwned = []string{"/tests", "/logs/verifier", "/solution", "/proc", "/sys"}

// SearchPaths are the verifier's search paths as the fresh sandbox
// (the image's own tools) reports them.
type SearchPaths struct {
	Exec   []string // PATH
	Python []string // sys.path, "" resolved to the workdir
	Site   []string // site.getsitepackages() and the user site, existing or not
}

// SearchPathsScript prints the search paths for ParseSearchPaths; run it
// as the verifier would run test.sh (user, environment, workdir).
const SearchPathsScript = `printf 'PATH=%s\n' "$PATH"
if command -v python3 >/dev/null 2>&1; then python3 -c 'import sys, site
for p in sys.path: print("PY=" + p)
try:
    for p in site.getsitepackages() + [site.getusersitepackages()]: print("SITE=" + p)
except Exception: pass' 2>/dev/null; fi`

// ParseSearchPaths reads SearchPathsScript's output.
func ParseSearchPaths(out, workdir string) SearchPaths {
	var sp SearchPaths
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "PATH":
			for _, d := range strings.Split(v, ":") {
				if d == "" || d == "." {
					d = workdir
				}
				if path.IsAbs(d) {
					sp.Exec = append(sp.Exec, path.Clean(d))
				}
			}
		case "PY":
			if v == "" {
				v = workdir
			}
			if path.IsAbs(v) {
				sp.Python = append(sp.Python, path.Clean(v))
			}
		case "SITE":
			if path.IsAbs(v) {
				sp.Site = append(sp.Site, path.Clean(v))
			}
		}
	}
	return sp
}

// Neutralised is one change of the agent's that the verifier sandbox
// does not receive, and why.
type Neutralised struct {
	Path string `json:"path"`
	// Rule is changed, shadowed, hook or link (see the trust rule).
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

func (n Neutralised) String() string { return n.Path + " (" + n.Rule + ": " + n.Detail + ")" }

// ChangeCollector is implemented by sandboxes that can list every change
// of their filesystem since Start (the Docker backend with a local engine,
// and the fake): what the fresh verifier sandbox considers.
type ChangeCollector interface {
	// Changes is Work under ChangePath instead of the work rule. Call it
	// after KillAll.
	Changes(ctx context.Context) (Work, error)
}

// RootOpener is implemented by sandboxes whose root this process can open
// (an O_PATH descriptor; the caller closes it).
type RootOpener interface {
	OpenRoot() (int, error)
}

// ErrFreshUnsupported is the fresh verifier sandbox asked of a backend
// that cannot list every change or read a fresh sandbox's root.
var ErrFreshUnsupported = errors.New("--verifier-sandbox fresh (the default) needs sandboxes whose every change and root this process can read (the Docker backend with the engine on this host, or the fake); on this backend pass --verifier-sandbox separate where it is supported, or --verifier-sandbox shared, which runs test.sh where the agent ran and lets tools the agent replaced decide the reward")

// CollectChanges is sb's Changes, ErrFreshUnsupported when it cannot.
func CollectChanges(ctx context.Context, sb Sandbox) (Work, error) {
	c, ok := sb.(ChangeCollector)
	if !ok {
		return Work{}, ErrFreshUnsupported
	}
	return c.Changes(ctx)
}

// imageEntry is what the image has at a path.
type imageEntry struct {
	st   unix.Stat_t
	link string
}

// TrustFilter applies the trust rule to the agent's changes w, judged
// against the image seen below root (a fresh sandbox's root, before
// anything is applied), for a verifier with search paths sp. It returns
// the changes to apply and those neutralised.
func TrustFilter(root int, w Work, sp SearchPaths) (Work, []Neutralised, error) {
	f := &trustFilter{root: root, sp: sp, workdir: path.Clean(w.Workdir), listings: map[string]map[string]bool{}}
	out := Work{Workdir: w.Workdir, Skipped: w.Skipped}
	var neu []Neutralised
	var dropped []string // neutralised directories: what lies below goes too
	below := func(p string) (string, bool) {
		for _, d := range dropped {
			if under(p, d) {
				return d, true
			}
		}
		return "", false
	}
	carried := map[string]bundle.Entry{}
	for _, e := range w.Entries {
		p := "/" + e.Name
		if _, ok := below(p); ok {
			continue
		}
		img, has, err := f.image(p)
		if err != nil {
			return Work{}, nil, err
		}
		if has && f.same(e, img, w.Owners[e.Name]) {
			continue // an unchanged copy
		}
		n, bad := f.judge(p, e, img, has)
		if bad {
			neu = append(neu, n)
			if e.Kind == bundle.KindDir {
				dropped = append(dropped, p)
			}
			continue
		}
		carried[p] = e
		out.Entries = append(out.Entries, e)
		if o, ok := w.Owners[e.Name]; ok {
			if out.Owners == nil {
				out.Owners = map[string][2]int{}
			}
			out.Owners[e.Name] = o
		}
	}
	for _, d := range w.Deleted {
		_, has, err := f.image(d)
		if err != nil {
			return Work{}, nil, err
		}
		if has && f.trustTree(d) {
			neu = append(neu, Neutralised{Path: d, Rule: "changed", Detail: "removes the image's entry; it stays"})
			continue
		}
		out.Deleted = append(out.Deleted, d)
	}
	// Links, judged in the state the verifier will see.
	var kept []bundle.Entry
	for _, e := range out.Entries {
		if e.Kind == bundle.KindSymlink {
			if n, bad := f.link("/"+e.Name, e.Linkname, carried); bad {
				neu = append(neu, n)
				delete(out.Owners, e.Name)
				continue
			}
		}
		kept = append(kept, e)
	}
	out.Entries = kept
	sort.Slice(neu, func(i, j int) bool { return neu[i].Path < neu[j].Path })
	return out, neu, nil
}

type trustFilter struct {
	root     int
	sp       SearchPaths
	workdir  string
	listings map[string]map[string]bool // directory → top-level names it answers
}

// image looks p up in the image with no symlink followed.
func (f *trustFilter) image(p string) (imageEntry, bool, error) {
	fd, err := OpenNoFollow(f.root, p, unix.O_PATH)
	if err != nil {
		return imageEntry{}, false, nil // missing, or below a link: not the image's entry
	}
	defer unix.Close(fd)
	var ie imageEntry
	if err := unix.Fstat(fd, &ie.st); err != nil {
		return imageEntry{}, false, fmt.Errorf("trust: stat the image's %s: %w", p, err)
	}
	if ie.st.Mode&unix.S_IFMT == unix.S_IFLNK {
		if ie.link, err = readLinkAt(fd, ""); err != nil {
			return imageEntry{}, false, fmt.Errorf("trust: readlink the image's %s: %w", p, err)
		}
	}
	return ie, true, nil
}

// same reports whether the change e leaves the image's entry as it was.
func (f *trustFilter) same(e bundle.Entry, img imageEntry, owner [2]int) bool {
	if uint32(e.Mode.Perm()) != img.st.Mode&0o777 || uint32(owner[0]) != img.st.Uid || uint32(owner[1]) != img.st.Gid {
		return false
	}
	switch e.Kind {
	case bundle.KindDir:
		return img.st.Mode&unix.S_IFMT == unix.S_IFDIR
	case bundle.KindSymlink:
		return img.st.Mode&unix.S_IFMT == unix.S_IFLNK && img.link == e.Linkname
	case bundle.KindFile:
		if img.st.Mode&unix.S_IFMT != unix.S_IFREG || img.st.Size != int64(len(e.Data)) {
			return false
		}
		fd, err := OpenNoFollow(f.root, "/"+e.Name, unix.O_RDONLY|unix.O_NONBLOCK)
		if err != nil {
			return false
		}
		file := os.NewFile(uintptr(fd), e.Name)
		defer file.Close()
		data, err := io.ReadAll(io.LimitReader(file, int64(len(e.Data))+1))
		return err == nil && bytes.Equal(data, e.Data)
	}
	return false
}

// topLevel reports whether p is directly below "/".
func topLevel(p string) bool { return path.Dir(p) == "/" }

// trustTree reports whether an image entry at p is in the trust base
// (rule 1).
func (f *trustFilter) trustTree(p string) bool {
	for _, t := range TrustTrees {
		if under(p, t) {
			return true
		}
	}
	return homeDot(p) || topLevel(p) && !f.imageDir(p)
}

// imageDir reports whether the image has a directory at p.
func (f *trustFilter) imageDir(p string) bool {
	img, has, _ := f.image(p)
	return has && img.st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// judge applies rules 1–3 to one change.
func (f *trustFilter) judge(p string, e bundle.Entry, img imageEntry, has bool) (Neutralised, bool) {
	if has {
		if f.trustTree(p) {
			what := "modifies the image's entry (content, mode or owner)"
			if kindOf(img.st.Mode) != e.Kind {
				what = "replaces the image's entry with another kind of file"
			}
			return Neutralised{Path: p, Rule: "changed", Detail: what + "; the image's stays"}, true
		}
		return Neutralised{}, false
	}
	switch {
	case homeDot(p):
		return Neutralised{Path: p, Rule: "hook", Detail: "a home directory's dot-entry (read by shells and interpreters at startup)"}, true
	case topLevel(p) && e.Kind != bundle.KindDir:
		return Neutralised{Path: p, Rule: "hook", Detail: "a file at the top of / (test runners read configuration and plugins from every parent of the test files)"}, true
	}
	for _, h := range hookPaths {
		if under(p, h) {
			return Neutralised{Path: p, Rule: "hook", Detail: "a location the loader, a shell or PAM reads by itself"}, true
		}
	}
	if strings.HasPrefix(p, "/etc/python") {
		return Neutralised{Path: p, Rule: "hook", Detail: "the interpreter's configuration"}, true
	}
	dir, base := path.Dir(p), path.Base(p)
	for _, d := range f.sp.Exec {
		if dir != d {
			continue
		}
		for _, o := range f.sp.Exec {
			if o != d && f.imageHas(o, base, false) {
				return Neutralised{Path: p, Rule: "shadowed", Detail: fmt.Sprintf("shadows the image's %s on the verifier's PATH", path.Join(o, base))}, true
			}
		}
	}
	if n, bad := f.python(p, e, dir, base); bad {
		return n, true
	}
	return Neutralised{}, false
}

// python applies rules 2 and 3 on Python's module search path.
func (f *trustFilter) python(p string, e bundle.Entry, dir, base string) (Neutralised, bool) {
	inPath := func(d string) bool { return slices.Contains(f.sp.Python, d) }
	isSite := func(d string) bool { return slices.Contains(f.sp.Site, d) }
	if strings.HasSuffix(base, ".pth") && (isSite(dir) || inPath(dir)) {
		return Neutralised{Path: p, Rule: "hook", Detail: "a .pth file in a site directory (run by the interpreter at startup)"}, true
	}
	// entry_points.txt of a new distribution on the path.
	if base == "entry_points.txt" && (strings.HasSuffix(dir, ".dist-info") || strings.HasSuffix(dir, ".egg-info")) &&
		(inPath(path.Dir(dir)) || isSite(path.Dir(dir))) {
		for _, line := range strings.Split(string(e.Data), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
				if g := strings.TrimSpace(line[1 : len(line)-1]); g != "console_scripts" && g != "gui_scripts" {
					return Neutralised{Path: p, Rule: "hook", Detail: fmt.Sprintf("registers entry points of group %q (plugins loaded without being asked for)", g)}, true
				}
			}
		}
	}
	if !inPath(dir) && !isSite(dir) {
		return Neutralised{}, false
	}
	mod := moduleName(base, e.Kind)
	if mod == "" {
		return Neutralised{}, false
	}
	if mod == "sitecustomize" || mod == "usercustomize" {
		return Neutralised{Path: p, Rule: "hook", Detail: "a module the interpreter imports at startup"}, true
	}
	for _, o := range slices.Concat(f.sp.Python, f.sp.Site) {
		if o != dir && f.imageHas(o, mod, true) {
			return Neutralised{Path: p, Rule: "shadowed", Detail: fmt.Sprintf("shadows the image's module %q in %s on the module search path", mod, o)}, true
		}
	}
	return Neutralised{}, false
}

// moduleName is the top-level module a directory entry named base
// provides ("" for none: metadata, caches, names with no module).
func moduleName(base string, kind bundle.Kind) string {
	if kind == bundle.KindDir {
		if strings.Contains(base, ".") || base == "__pycache__" {
			return ""
		}
		return base
	}
	for _, ext := range []string{".py", ".pyc", ".so", ".pyd"} {
		if strings.HasSuffix(base, ext) {
			name := strings.TrimSuffix(base, ext)
			name, _, _ = strings.Cut(name, ".") // foo.cpython-311-x86_64-linux-gnu.so
			return name
		}
	}
	return ""
}

// imageHas reports whether the image's directory d answers name: an
// entry of that name (modules: a module file or package of that name).
func (f *trustFilter) imageHas(d, name string, module bool) bool {
	key := d
	if module {
		key = "py:" + d
	}
	names, ok := f.listings[key]
	if !ok {
		names = map[string]bool{}
		if fd, err := OpenNoFollow(f.root, d, unix.O_RDONLY|unix.O_DIRECTORY); err == nil {
			dir := os.NewFile(uintptr(fd), d)
			ents, _ := dir.Readdirnames(-1)
			dir.Close()
			for _, n := range ents {
				if module {
					kind := bundle.KindFile
					if f.imageDir(path.Join(d, n)) {
						kind = bundle.KindDir
					}
					if m := moduleName(n, kind); m != "" {
						names[m] = true
					}
				} else {
					names[n] = true
				}
			}
		}
		f.listings[key] = names
	}
	return names[name]
}

// kindOf is the bundle kind of a stat mode.
func kindOf(mode uint32) bundle.Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return bundle.KindDir
	case unix.S_IFLNK:
		return bundle.KindSymlink
	case unix.S_IFREG:
		return bundle.KindFile
	}
	return bundle.Kind(255)
}

// link applies rule 4 to the carried symlink at p.
func (f *trustFilter) link(p, target string, carried map[string]bundle.Entry) (Neutralised, bool) {
	roots := append([]string{f.workdir, "/home"}, WorkRoots...)
	if strings.HasPrefix(p, "/home/") && strings.Count(p, "/") == 2 {
		roots = append(roots, p)
	}
	for _, r := range roots {
		if p == r {
			return Neutralised{Path: p, Rule: "link", Detail: "a work root or home directory replaced by a link to " + target}, true
		}
	}
	abs := target
	if !path.IsAbs(abs) {
		abs = path.Join(path.Dir(p), target)
	}
	final, ok := f.resolve(abs, carried)
	if !ok {
		return Neutralised{Path: p, Rule: "link", Detail: "a link to " + target + " that does not resolve within 40 links"}, true
	}
	// A link to the agent's own files in a home directory is no attack on
	// the verifier's; a link to a dot-entry is.
	if homeDot(final) || slices.ContainsFunc(verifierOwned, func(v string) bool { return under(final, v) }) {
		return Neutralised{Path: p, Rule: "link", Detail: fmt.Sprintf("a link to %s, which resolves into %s", target, final)}, true
	}
	return Neutralised{}, false
}

// resolve resolves p component by component in the state the verifier
// will see: the carried entries over the image.
func (f *trustFilter) resolve(p string, carried map[string]bundle.Entry) (string, bool) {
	hops := 0
	rest := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	cur := "/"
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		var target string
		isLink := false
		if e, ok := carried[next]; ok {
			isLink, target = e.Kind == bundle.KindSymlink, e.Linkname
		} else if img, has, _ := f.image(next); has && img.st.Mode&unix.S_IFMT == unix.S_IFLNK {
			isLink, target = true, img.link
		}
		if !isLink {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", false
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
	return cur, true
}

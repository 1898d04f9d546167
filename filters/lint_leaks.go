package filters

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/dockerctx"
)

// imageReport is what the leak checks learn from the Dockerfile and its
// build context: findings by lint code.
type imageReport struct {
	tests, solution  []string // tests_in_image, solution_in_image details
	shared, solData  []string // shared_project_tests, shared_solution_files details
	unparsable       string   // dockerfile_unparsable detail
	outside, missing []string // copy_outside_context, copy_source_missing details
}

// imageLeaks resolves what the task's image holds from the bundle and
// compares it, by content, with the verifier (tests/) and the oracle
// (solution/):
//   - tests_in_image: test.sh itself, or every verifier file test.sh
//     names (its entry files: the pytest target, python/bash script...),
//     or an answer-key file of tests/ (expected*, answer*, golden*), is
//     byte-identical to a file the Dockerfile copies into the image;
//   - shared_project_tests: other tests/ files found in the image (the
//     project's own tests, which the verifier re-runs by design);
//   - solution_in_image: solve.sh or a file it names is in the image, or
//     every code file of solution/ is; shared_solution_files: other
//     solution/ files the environment also ships (input data, unchanged
//     files of a solution that carries the whole fixed project).
//
// Names do not matter, contents do: a folder named tests or solution in
// the image is no leak unless its bytes are the verifier's or the oracle's.
func imageLeaks(b *bundle.Bundle, info *bundle.Info) imageReport {
	var r imageReport
	root, dfName, note := buildContext(b, info)
	if note != "" {
		r.unparsable = note
		return r
	}
	if dfName == "" {
		return r // a prebuilt image: nothing of the bundle is built into it
	}
	data, ok := b.Data(dfName)
	if !ok {
		r.unparsable = dfName + " is too large to read: leak checks skipped"
		return r
	}
	df, err := dockerctx.Parse(data)
	if err != nil {
		r.unparsable = fmt.Sprintf("%s: %v (Docker would not build it; leak checks skipped)", dfName, err)
		return r
	}
	var files []dockerctx.File
	for _, name := range b.Names {
		rel, ok := strings.CutPrefix(name, root)
		if !ok && root != "" {
			continue
		}
		if f := b.Files[name]; f.Kind == bundle.KindFile || f.Kind == bundle.KindHardlink {
			files = append(files, dockerctx.File{Name: rel, Digest: f.Digest, Size: f.Size})
		}
	}
	var ignore *dockerctx.Ignore
	if ig, ok := b.Data(root + ".dockerignore"); ok {
		ignore = dockerctx.ParseIgnore(ig)
	}
	placed, problems := dockerctx.Resolve(df, files, ignore)
	for _, p := range problems {
		d := fmt.Sprintf("%s line %d (%s): source %q", dfName, p.Copy.Line, p.Copy.Text, p.Source)
		if p.Kind == dockerctx.ProblemOutside {
			r.outside = append(r.outside, d+" is outside the build context "+strings.TrimSuffix(nonEmpty(root, "./"), "/"))
		} else {
			r.missing = append(r.missing, d+" matches no file of the build context")
		}
	}
	inImage := map[[32]byte]dockerctx.Placed{}
	for _, p := range placed {
		if _, seen := inImage[p.File.Digest]; !seen {
			inImage[p.File.Digest] = p
		}
	}
	// Most tasks share nothing with their verifier or oracle: stop before
	// reading test.sh and solve.sh.
	shares := false
	for _, name := range b.Names {
		if strings.HasPrefix(name, "tests/") || strings.HasPrefix(name, "solution/") {
			if _, ok := inImage[b.Files[name].Digest]; ok && b.Files[name].Kind == bundle.KindFile {
				shares = true
				break
			}
		}
	}
	if !shares {
		return r
	}
	where := func(name string) (string, bool) {
		f := b.Files[name]
		if f == nil || blank(b, name) {
			return "", false
		}
		p, ok := inImage[f.Digest]
		if !ok {
			return "", false
		}
		s := fmt.Sprintf("%s = %s%s in the image at %s (%s line %d: %s", name, root, p.File.Name, p.Dest, dfName, p.Copy.Line, p.Copy.Text)
		for _, v := range p.Via {
			s += fmt.Sprintf("; then line %d: %s", v.Line, v.Text)
		}
		return s + ")", true
	}

	entries := verifierEntries(b, info.TestScript)
	var entryHits []string
	for _, e := range entries {
		if d, ok := where(e); ok {
			entryHits = append(entryHits, d)
		}
	}
	leaked := map[string]bool{}
	if d, ok := where(info.TestScript); ok {
		r.tests = append(r.tests, d+" [the verifier script]")
		leaked[info.TestScript] = true
	}
	if len(entries) > 0 && len(entryHits) == len(entries) {
		for i, e := range entries {
			r.tests = append(r.tests, entryHits[i]+" [a file test.sh runs]")
			leaked[e] = true
		}
	}
	for _, name := range b.Names {
		if !strings.HasPrefix(name, "tests/") || leaked[name] {
			continue
		}
		d, ok := where(name)
		switch {
		case !ok:
		case answerKey(name):
			r.tests = append(r.tests, d+" [an expected-output file]")
		default:
			r.shared = append(r.shared, d)
		}
	}

	// The oracle: solve.sh and the files it names are its secret; other
	// files may be unchanged copies of the environment (a solution/ that
	// ships the whole fixed project), secret only when every code file of
	// solution/ is in the image, i.e. the oracle has no hidden part left.
	solNamed := map[string]bool{"solution/solve.sh": true}
	for _, e := range namedFiles(b, "solution/solve.sh", "/solution/", "solution/") {
		solNamed[e] = true
	}
	var others, othersDetail []string
	allCode := true
	for _, name := range b.Names {
		if !strings.HasPrefix(name, "solution/") || !b.Has(name, bundle.KindFile) || blank(b, name) {
			continue
		}
		d, ok := where(name)
		switch {
		case ok && solNamed[name]:
			r.solution = append(r.solution, d)
		case ok:
			others, othersDetail = append(others, name), append(othersDetail, d)
		case !solNamed[name] && codeFile(name):
			allCode = false
		}
	}
	hasCode := false
	for _, name := range others {
		hasCode = hasCode || codeFile(name)
	}
	if hasCode && allCode {
		r.solution = append(r.solution, othersDetail...)
	} else {
		r.solData = append(r.solData, othersDetail...)
	}
	return r
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// blank reports an empty or whitespace-only file: such files (empty
// __init__.py...) match anything and prove nothing.
func blank(b *bundle.Bundle, name string) bool {
	f := b.Files[name]
	if f.Size == 0 {
		return true
	}
	data, ok := b.Data(name)
	return ok && len(bytes.TrimSpace(data)) == 0
}

// answerKey reports a verifier file named as an expected output.
func answerKey(name string) bool {
	base := strings.ToLower(path.Base(name))
	for _, w := range []string{"expected", "answer", "golden"} {
		if strings.Contains(base, w) {
			return true
		}
	}
	return false
}

// codeFile reports a source or script file (a solution's code), as
// opposed to data it may share with the environment.
func codeFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".py", ".sh", ".bash", ".js", ".ts", ".go", ".rs", ".c", ".cc", ".cpp", ".h", ".hpp", ".java", ".kt",
		".rb", ".pl", ".php", ".sql", ".patch", ".diff", ".r", ".jl", ".lua", ".scala", ".cs", ".swift", ".hs", ".ml", "":
		return true
	}
	return false
}

// verifierEntries returns the tests/ files test.sh runs by name (not
// test.sh itself): files it names under /tests/ or $TEST_DIR/, or by a
// relative name after `cd /tests`, pytest node ids reduced to their
// file; shell scripts among them are read in turn. A directory target
// (`pytest /tests`) names no file: the project tests in it are shared by
// design, and only test.sh itself then decides.
func verifierEntries(b *bundle.Bundle, script string) []string {
	seen := map[string]bool{script: true}
	var out []string
	queue := []string{script}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, name := range namedFiles(b, s, "/tests/", "tests/") {
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, name)
			if strings.HasSuffix(name, ".sh") {
				queue = append(queue, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

var shellSplit = strings.NewReplacer(";", " ", "|", " ", "&", " ", "(", " ", ")", " ", "<", " ", ">", " ",
	"\"", " ", "'", " ", "=", " ", "`", " ", ",", " ")

// namedFiles returns the members under prefix (e.g. "tests/") that a
// shell script names by their absolute in-sandbox path (abs, e.g.
// "/tests/") or, after a `cd` into that directory, by a relative name.
func namedFiles(b *bundle.Bundle, script, abs, prefix string) []string {
	data, ok := b.Data(script)
	if !ok {
		return nil
	}
	dirVar := map[string]bool{"/tests/": true}[abs]
	var out []string
	inDir := false
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			line = line[:i]
		}
		words := strings.Fields(shellSplit.Replace(line))
		for i, w := range words {
			if w == "cd" && i+1 < len(words) {
				t := strings.TrimSuffix(words[i+1], "/")
				inDir = t == strings.TrimSuffix(abs, "/") || dirVar && (t == "$TEST_DIR" || t == "${TEST_DIR}")
				continue
			}
			w, _, _ = strings.Cut(w, "::")
			var rel string
			switch {
			case strings.HasPrefix(w, abs):
				rel = w[len(abs):]
			case dirVar && strings.HasPrefix(w, "$TEST_DIR/"):
				rel = w[len("$TEST_DIR/"):]
			case dirVar && strings.HasPrefix(w, "${TEST_DIR}/"):
				rel = w[len("${TEST_DIR}/"):]
			case inDir && !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "$"):
				rel = strings.TrimPrefix(w, "./")
			default:
				continue
			}
			name := prefix + path.Clean(rel)
			if b.Has(name, bundle.KindFile) && name != script {
				out = append(out, name)
			}
		}
	}
	return out
}

// buildContext returns the bundle prefix of the build context ("" for
// the task root) and the Dockerfile's member name: environment/ and its
// Dockerfile, or what the compose file's main service says (build
// context and dockerfile relative to environment/). A prebuilt image
// (docker_image, no Dockerfile) has no Dockerfile (""). note says why the
// context could not be resolved.
func buildContext(b *bundle.Bundle, info *bundle.Info) (root, dockerfile, note string) {
	switch info.EnvKind {
	case "dockerfile":
		return "environment/", "environment/Dockerfile", ""
	case "compose":
	default:
		return "", "", ""
	}
	name := "environment/docker-compose.yaml"
	if !b.Has(name, bundle.KindFile) {
		name = "environment/docker-compose.yml"
	}
	data, ok := b.Data(name)
	if !ok {
		return "", "", name + " is too large to read: leak checks skipped"
	}
	ctx, df, found := composeBuild(string(data))
	if !found {
		return "", "", "" // the main service uses an image: nothing built
	}
	dir := path.Clean(path.Join("environment", ctx))
	if dir == ".." || strings.HasPrefix(dir, "../") {
		return "", "", fmt.Sprintf("%s: build context %q is outside the task: leak checks skipped", name, ctx)
	}
	if dir == "." {
		dir = ""
	} else {
		dir += "/"
	}
	if df == "" {
		df = "Dockerfile"
	}
	dfName := path.Clean(dir + df)
	if !b.Has(dfName, bundle.KindFile) {
		return "", "", fmt.Sprintf("%s: the main service's Dockerfile %s is not in the task: leak checks skipped", name, dfName)
	}
	return dir, dfName, ""
}

// composeBuild reads services.main.build from a compose file: either a
// context string or a mapping with context and dockerfile. It is a
// line scanner for the two common shapes, not a YAML parser.
func composeBuild(src string) (ctx, dockerfile string, found bool) {
	indentOf := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	value := func(l string) string {
		_, v, _ := strings.Cut(l, ":")
		return strings.Trim(strings.TrimSpace(v), `"'`)
	}
	state, mainIndent, buildIndent := 0, -1, -1
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		in := indentOf(l)
		switch {
		case state == 0 && in == 0 && t == "services:":
			state = 1
		case state >= 1 && in == 0:
			state = 0
		case state == 1 && t == "main:":
			state, mainIndent = 2, in
		case state >= 2 && in <= mainIndent:
			state = 4 // past the main service
		case state == 4:
		case state == 2 && strings.HasPrefix(t, "build:"):
			found = true
			if v := value(t); v != "" {
				return v, "", true
			}
			state, buildIndent = 3, in
		case state == 3 && in <= buildIndent:
			state = 2
		case state == 3 && strings.HasPrefix(t, "context:"):
			ctx = value(t)
		case state == 3 && strings.HasPrefix(t, "dockerfile:"):
			dockerfile = value(t)
		}
	}
	if ctx == "" {
		ctx = "."
	}
	return ctx, dockerfile, found
}

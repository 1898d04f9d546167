package filters

import (
	"path"
	"regexp"
	"strings"
)

// CheatTarget is a file or folder an instruction names, which a cheating
// agent creates without doing the work.
type CheatTarget struct {
	// Path is absolute, or relative to the task's working directory.
	Path string
	// Dir: create a folder (a trailing slash, or an absolute path whose
	// last element has no dot), else a file.
	Dir bool
}

// maxCheatTargets bounds what one instruction can make a cheat create.
const maxCheatTargets = 64

var (
	// An absolute path: a slash after the start of the text or a
	// delimiter (so "http://host/x", "a/b" and "1/2" are not paths).
	absPathRE = regexp.MustCompile("(?:^|[\\s`\"'(\\[{<=,;])(/[A-Za-z0-9_.+@~/-]*)")
	// A backticked span on one line.
	backtickRE = regexp.MustCompile("`([^`\n]+)`")
	// A fenced code block, left out of the backtick scan (its spans are
	// code, not file names).
	fenceRE = regexp.MustCompile("(?s)```.*?(```|$)")
	// A relative path: path characters only, with a letter.
	relPathRE = regexp.MustCompile(`^[A-Za-z0-9_.+@~/-]+$`)
	// An extension worth the name: 1–10 characters with a letter.
	extRE = regexp.MustCompile(`^[A-Za-z0-9]{0,9}[A-Za-z][A-Za-z0-9]{0,9}$`)
	// Numbers and double-quoted strings the echo cheat prints.
	numberRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])(-?[0-9]+(?:\.[0-9]+)?)\b`)
	quotedRE = regexp.MustCompile(`"([^"\n]{1,80})"`)
)

// reservedRoots are trees a cheat never writes to: the harness's own
// (tests, verifier logs, solution) and the kernel's.
var reservedRoots = []string{"/tests", "/logs/verifier", "/solution", "/proc", "/sys", "/dev"}

// InstructionPaths extracts the files and folders an instruction names,
// in order of first mention, without duplicates (at most 64):
//   - every absolute path (a slash at the start of a word, a quote or a
//     bracket; never inside a URL or a fraction), with trailing sentence
//     punctuation removed; a folder when it ends in a slash or its last
//     element has no dot;
//   - every backticked relative path outside fenced code blocks that ends
//     in a slash (a folder) or whose last element is NAME.EXT with an
//     extension of 1–10 letters and digits (a file): `out.csv`,
//     `results/`, `src/main.go`; not `.log`, `3.11`, `LC_ALL=C` or
//     `f(x)`.
//
// Paths under /tests, /logs/verifier, /solution, /proc, /sys and /dev,
// the root itself and paths with "." or ".." elements are left out.
func InstructionPaths(instruction string) []CheatTarget {
	var out []CheatTarget
	seen := map[string]bool{}
	add := func(p string, dir bool) {
		if len(out) >= maxCheatTargets {
			return
		}
		clean := strings.TrimSuffix(p, "/")
		if clean == "" || seen[clean] || strings.Contains(p, "//") || !hasLetter(clean) {
			return
		}
		for _, el := range strings.Split(clean, "/") {
			if el == "." || el == ".." {
				return
			}
		}
		for _, r := range reservedRoots {
			if clean == r || strings.HasPrefix(clean, r+"/") {
				return
			}
		}
		seen[clean] = true
		out = append(out, CheatTarget{Path: clean, Dir: dir})
	}
	for _, m := range absPathRE.FindAllStringSubmatch(instruction, -1) {
		p := strings.TrimRight(m[1], ".,;:")
		add(p, strings.HasSuffix(p, "/") || !strings.Contains(path.Base(p), "."))
	}
	for _, m := range backtickRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(instruction, ""), -1) {
		s := strings.TrimPrefix(strings.TrimSpace(m[1]), "./")
		if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "-") || !relPathRE.MatchString(s) {
			continue
		}
		if strings.HasSuffix(s, "/") {
			add(s, true)
			continue
		}
		name, ext, ok := strings.Cut(path.Base(s), ".")
		if ok && name != "" && extRE.MatchString(lastExt(ext)) {
			add(s, false)
		}
	}
	return out
}

// lastExt is the part after the last dot ("tar.gz" → "gz").
func lastExt(ext string) string {
	if i := strings.LastIndex(ext, "."); i >= 0 {
		return ext[i+1:]
	}
	return ext
}

func hasLetter(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
}

// instructionNumbers lists the numbers an instruction mentions, in order,
// without duplicates (at most 32).
func instructionNumbers(instruction string) []string {
	return uniqueMatches(numberRE, instruction, 32)
}

// instructionQuotes lists the double-quoted strings of an instruction, in
// order, without duplicates (at most 32).
func instructionQuotes(instruction string) []string {
	return uniqueMatches(quotedRE, instruction, 32)
}

func uniqueMatches(re *regexp.Regexp, s string, limit int) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if !seen[m[1]] && len(out) < limit {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// plausibleContent is what the plausible cheat writes into a file it
// created, by extension: an empty but well-formed document where the
// format has one, the instruction's numbers (one per line) for text.
// archive is set for formats written by a command instead (tar, gzip).
func plausibleContent(p string, numbers []string) (content, archive string) {
	base := strings.ToLower(path.Base(p))
	text := "0\n"
	if len(numbers) > 0 {
		text = strings.Join(numbers, "\n") + "\n"
	}
	switch {
	case strings.HasSuffix(base, ".tar.gz"), strings.HasSuffix(base, ".tgz"):
		return "", "tar -czf %s -T /dev/null"
	case strings.HasSuffix(base, ".tar"):
		return "", "tar -cf %s -T /dev/null"
	case strings.HasSuffix(base, ".gz"):
		return "", "printf '' | gzip > %s"
	}
	switch path.Ext(base) {
	case ".json", ".jsonl", ".ndjson", ".yaml", ".yml":
		return "{}\n", ""
	case ".csv":
		return "id,value\n", ""
	case ".tsv":
		return "id\tvalue\n", ""
	case ".txt", ".out", ".log", ".dat", "":
		return text, ""
	case ".md":
		return "# Result\n\n" + text, ""
	case ".ini", ".cfg", ".conf", ".toml":
		return "[main]\n", ""
	case ".py":
		return "# done\n", ""
	case ".sh":
		return "#!/bin/sh\nexit 0\n", ""
	case ".html", ".htm":
		return "<html><body></body></html>\n", ""
	case ".xml":
		return "<?xml version=\"1.0\"?>\n<root/>\n", ""
	}
	return "", ""
}

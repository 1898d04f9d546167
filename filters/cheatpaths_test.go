package filters

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestInstructionPaths(t *testing.T) {
	for _, c := range []struct {
		name, instruction string
		want              []string // PATH for a file, PATH/ for a folder
	}{
		{"sample shell task: input and output",
			"Find the 4 most frequent words in `/app/data/text.txt` (words are separated by whitespace). Write them to `/output/result.txt` as lines `<word> <count>`, ordered by count.",
			[]string{"/app/data/text.txt", "/output/result.txt"}},
		{"folder without extension, extension-only spans and LC_ALL are not paths",
			"Using standard command-line tools, count the total number of lines across all `.log` files directly inside `/app/data/logs` and write the total to `/output/result.txt`, sorted (`LC_ALL=C`).",
			[]string{"/app/data/logs/", "/output/result.txt"}},
		{"archive and a relative folder in backticks",
			"Create a gzip-compressed tar archive `/output/backup.tar.gz` of the directory `/app/data/project`. Paths inside the archive must start with `project/`.",
			[]string{"/output/backup.tar.gz", "/app/data/project/", "project/"}},
		{"fenced code and function names are not paths",
			"Implement the function below in `/app/solution.py`.\n\n```python\ndef rle_decode(s: str) -> str:\n    \"\"\"`s.upper()` and `x.py`\"\"\"\n```\n\nThe tests import `rle_decode(s)` and call `3.11` things.",
			[]string{"/app/solution.py"}},
		{"URL, fraction and sentence end",
			"A web server is running on port 8080. Fetch http://localhost:8080/index.html, compute 1/2 and write them to /app/result.txt.",
			[]string{"/app/result.txt"}},
		{"Harbor hello-workdir: relative backticked file",
			"Run `pwd` and write its output to a file called `workdir.txt` in the current directory.",
			[]string{"workdir.txt"}},
		{"Harbor hello-world: a bare file name is not extracted",
			"Create a file called hello.txt with \"Hello, world!\" as the content.",
			nil},
		{"reserved trees, root and dot elements are left out",
			"Do not edit /tests/test_outputs.py or /logs/verifier/reward.txt; read /proc/cpuinfo, write `../escape.txt`, `/` and /app/./x.txt; save /app/out/ and /app/out again.",
			[]string{"/app/out/"}},
		{"quoted and bracketed paths, dotfile",
			"Write the config to \"/etc/app/config.yaml\" (see [/app/README.md]) and add an alias to /root/.bashrc.",
			[]string{"/etc/app/config.yaml", "/app/README.md", "/root/.bashrc"}},
	} {
		var got []string
		for _, tg := range InstructionPaths(c.instruction) {
			if tg.Dir {
				got = append(got, tg.Path+"/")
			} else {
				got = append(got, tg.Path)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestInstructionPathsHarborFixtures: the paths of the real Harbor
// examples' instructions.
func TestInstructionPathsHarborFixtures(t *testing.T) {
	want := map[string]string{
		"hello-alpine":      "",
		"hello-healthcheck": "/app/result.txt",
		"hello-user":        "/app/whoami.txt /app/hello.txt",
		"hello-workdir":     "workdir.txt",
		"hello-world":       "",
	}
	for name, w := range want {
		data, err := os.ReadFile(filepath.Join("../testdata/harbor-examples", name, "instruction.md"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tg := range InstructionPaths(string(data)) {
			got = append(got, tg.Path)
		}
		if g := strings.Join(got, " "); g != w {
			t.Errorf("%s: %q, want %q", name, g, w)
		}
	}
}

func TestInstructionNumbersAndQuotes(t *testing.T) {
	in := "Return the Roman numeral for `n` (1 <= `n` <= 3999), e.g. 4 is \"iv\" and 1994 is \"mcmxciv\"; `f('-9 -3 +')` returns -12, not 12a1b or x2."
	if got, want := instructionNumbers(in), []string{"1", "3999", "4", "1994", "-9", "-3", "-12"}; !slices.Equal(got, want) {
		t.Errorf("numbers %q, want %q", got, want)
	}
	if got, want := instructionQuotes(in), []string{"iv", "mcmxciv"}; !slices.Equal(got, want) {
		t.Errorf("quotes %q, want %q", got, want)
	}
}

// TestCheatScript runs the touch and plausible cheats' shell commands with
// the host's sh in a scratch folder: they create the named paths that are
// missing, with content by extension, and leave existing files alone.
func TestCheatScript(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	targets := []CheatTarget{
		{Path: "in/data.txt"}, {Path: "out/result.txt"}, {Path: "out/r.json"}, {Path: "out/t.csv"},
		{Path: "out/run.sh"}, {Path: "results", Dir: true}, {Path: "it's odd.txt"},
	}
	instr := "Sum the 3 columns of 17 rows."
	for _, c := range []struct {
		level CheatLevel
		want  map[string]string
	}{
		{CheatTouch, map[string]string{"out/result.txt": "", "out/r.json": "", "out/t.csv": "", "out/run.sh": "", "it's odd.txt": ""}},
		{CheatPlausible, map[string]string{"out/result.txt": "3\n17\n", "out/r.json": "{}\n", "out/t.csv": "id,value\n", "out/run.sh": "#!/bin/sh\nexit 0\n", "it's odd.txt": "3\n17\n"}},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "in/data.txt"), []byte("input\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script, _ := CheatActor{Level: c.level, Targets: targets, Instruction: instr}.script()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", c.level, err, out)
		}
		if n := strings.Count(string(out), "@@cheat "); n != 6 {
			t.Errorf("%s: reported %d created paths, want 6:\n%s", c.level, n, out)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "in/data.txt")); string(data) != "input\n" {
			t.Errorf("%s: an existing input was changed to %q", c.level, data)
		}
		for p, w := range c.want {
			if data, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(data) != w {
				t.Errorf("%s: %s = %q (%v), want %q", c.level, p, data, err, w)
			}
		}
		if st, err := os.Stat(filepath.Join(dir, "results")); err != nil || !st.IsDir() {
			t.Errorf("%s: results/ not created: %v", c.level, err)
		}
	}
}

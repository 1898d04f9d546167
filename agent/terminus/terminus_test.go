package terminus

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func hasWarning(ws []string, sub string) bool {
	for _, w := range ws {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestParse(t *testing.T) {
	const ok = `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": 0.5}]}`
	lsCmd := []Command{{Keystrokes: "ls\n", Duration: 0.5}}

	tests := []struct {
		name     string
		in       string
		wantErr  string // substring; "" means success
		analysis string
		plan     string
		cmds     []Command // checked when non-nil
		complete bool
		warn     []string // substrings that must appear among the warnings
		noWarn   bool     // no warnings at all
	}{
		{name: "plain", in: ok, analysis: "a", plan: "p", cmds: lsCmd, noWarn: true},
		{name: "surrounding whitespace", in: "\n  " + ok + "\n\n", cmds: lsCmd, noWarn: true},
		{name: "empty commands means wait", in: `{"analysis":"a","plan":"p","commands":[]}`, cmds: []Command{}, noWarn: true},
		{
			name:     "braces inside strings",
			in:       `{"analysis": "saw } and {{ in output", "plan": "print \"{\"", "commands": [{"keystrokes": "echo '}'\n", "duration": 1}]}`,
			analysis: "saw } and {{ in output", plan: `print "{"`,
			cmds: []Command{{Keystrokes: "echo '}'\n", Duration: 1}}, noWarn: true,
		},
		{
			name:     "escaped backslash before quote",
			in:       `{"analysis": "path C:\\", "plan": "}", "commands": []} trailing`,
			analysis: `path C:\`, plan: "}", cmds: []Command{},
			warn: []string{"extra text after"},
		},
		{
			name: "nested objects",
			in:   `{"analysis": "a", "plan": "p", "meta": {"x": {"y": [1, {"z": "}"}]}}, "commands": [{"keystrokes": "pwd\n", "duration": 2}]}`,
			cmds: []Command{{Keystrokes: "pwd\n", Duration: 2}}, noWarn: true,
		},
		{
			name: "leading and trailing prose",
			in:   "Sure! Here is my answer:\n```json\n" + ok + "\n```\nLet me know.",
			cmds: lsCmd, warn: []string{"extra text before", "extra text after"},
		},
		{name: "leading prose only", in: "answer: " + ok, cmds: lsCmd, warn: []string{"extra text before"}},
		{
			name:     "first balanced object wins",
			in:       ok + ` {"analysis": "b", "plan": "q", "commands": []}`,
			analysis: "a", cmds: lsCmd, warn: []string{"extra text after"},
		},
		{
			name: "missing final brace auto-fixed",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": 0.5}]`,
			cmds: lsCmd, warn: []string{"auto-corrected", "1 missing closing brace"},
		},
		{
			name:    "missing bracket is not fixable",
			in:      `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": 0.5`,
			wantErr: "invalid JSON", // the ']' is missing too: not fixable by braces alone
		},
		{
			name: "missing braces with nested object",
			in:   `{"analysis": "a", "plan": "p", "commands": [], "extra": {"k": "v"`,
			cmds: []Command{}, warn: []string{"auto-corrected", "2 missing closing brace"},
		},
		{
			name:    "unterminated string not fixable",
			in:      `{"analysis": "a, "plan": "p", "commands": []`,
			wantErr: "incomplete JSON object",
		},
		{
			name: "json embedded after prose with braces",
			in:   "I will use {curly} notation. " + ok,
			cmds: lsCmd, warn: []string{"auto-corrected", "mixed content", "extra text before"},
		},
		{
			name: "json embedded after unbalanced prose brace",
			in:   "Open with { then:\n" + ok,
			cmds: lsCmd, warn: []string{"auto-corrected", "mixed content"},
		},
		{
			name: "example object before the real reply",
			in:   `Each command looks like {"keystrokes": "x"}. Reply: ` + ok,
			cmds: lsCmd, warn: []string{"auto-corrected"},
		},
		{name: "no JSON", in: "I am done thinking.", wantErr: "no JSON object found"},
		{name: "empty", in: "", wantErr: "no JSON object found"},
		{name: "invalid JSON", in: `{"analysis": "a", "plan": "p", "commands": [], }`, wantErr: "invalid JSON"},
		{name: "invalid JSON single quotes", in: `{'analysis': 'a'}`, wantErr: "invalid JSON"},
		{name: "missing analysis", in: `{"plan": "p", "commands": []}`, wantErr: "analysis"},
		{name: "missing plan", in: `{"analysis": "a", "commands": []}`, wantErr: "missing required field(s): plan"},
		{name: "missing commands", in: `{"analysis": "a", "plan": "p"}`, wantErr: "commands"},
		{name: "missing several", in: `{"foo": 1}`, wantErr: "analysis, plan, commands"},
		{name: "missing commands even if complete", in: `{"analysis": "a", "plan": "p", "task_complete": true}`, wantErr: "commands"},
		{name: "commands not a list", in: `{"analysis": "a", "plan": "p", "commands": "ls"}`, wantErr: "'commands' must be an array"},
		{name: "commands null", in: `{"analysis": "a", "plan": "p", "commands": null}`, wantErr: "'commands' must be an array"},
		{name: "command not an object", in: `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "a\n"}, "ls"]}`, wantErr: "commands[1]"},
		{name: "command missing keystrokes", in: `{"analysis": "a", "plan": "p", "commands": [{"duration": 1}]}`, wantErr: "commands[0]"},
		{name: "keystrokes not a string", in: `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": ["l","s"]}]}`, wantErr: "'keystrokes' must be a string"},
		{name: "duration not a number", in: `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": "5"}]}`, wantErr: "'duration' must be a number"},
		{name: "duration bool", in: `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": true}]}`, wantErr: "commands[0]"},
		{
			name: "duration missing defaults",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n"}]}`,
			cmds: []Command{{Keystrokes: "ls\n", Duration: DefaultDuration}}, warn: []string{"missing 'duration'"},
		},
		{
			name: "duration null defaults",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": null}]}`,
			cmds: []Command{{Keystrokes: "ls\n", Duration: DefaultDuration}},
		},
		{
			name: "negative duration",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": -3}]}`,
			cmds: []Command{{Keystrokes: "ls\n", Duration: 0}}, warn: []string{"negative duration"},
		},
		{
			name: "duration capped",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "make\n", "duration": 600}]}`,
			cmds: []Command{{Keystrokes: "make\n", Duration: MaxDuration}}, warn: []string{"capped at 60"},
		},
		{
			name: "duration huge exponent",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "x\n", "duration": 1e999}, {"keystrokes": "y\n", "duration": -1e999}]}`,
			cmds: []Command{{Keystrokes: "x\n", Duration: MaxDuration}, {Keystrokes: "y\n", Duration: 0}},
		},
		{
			name: "duration exactly 60 and 0 and int",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "x\n", "duration": 60}, {"keystrokes": "y\n", "duration": 0}, {"keystrokes": "z", "duration": 3}]}`,
			cmds: []Command{{"x\n", 60}, {"y\n", 0}, {"z", 3}}, noWarn: true,
		},
		{
			name: "missing newline between commands",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls", "duration": 1}, {"keystrokes": "pwd\n", "duration": 1}]}`,
			cmds: []Command{{"ls", 1}, {"pwd\n", 1}}, warn: []string{"command 1 (commands[0]) should end with a newline"},
		},
		{
			name: "tmux key name passes through",
			in:   `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "C-c", "duration": 0.1}]}`,
			cmds: []Command{{"C-c", 0.1}}, noWarn: true,
		},
		{
			name: "unknown fields ignored",
			in:   `{"analysis": "a", "plan": "p", "confidence": 0.9, "commands": [{"keystrokes": "ls\n", "duration": 0.5, "is_blocking": true}]}`,
			cmds: lsCmd, warn: []string{"unknown field(s) ignored: is_blocking"},
		},
		{
			name:     "duplicate keys last wins",
			in:       `{"analysis": "first", "analysis": "second", "plan": "p", "commands": []}`,
			analysis: "second", cmds: []Command{},
		},
		{
			name:     "non-string analysis warns",
			in:       `{"analysis": {"k": 1}, "plan": null, "commands": []}`,
			analysis: `{"k": 1}`, plan: "", cmds: []Command{},
			warn: []string{"'analysis' should be a string", "'plan' should be a string"},
		},
		{name: "task_complete true", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": true}`, complete: true, cmds: []Command{}, noWarn: true},
		{name: "task_complete false", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": false}`, complete: false, noWarn: true},
		{name: "task_complete yes", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": "yes"}`, complete: true},
		{name: "task_complete True", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": "True"}`, complete: true},
		{name: "task_complete string 1", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": "1"}`, complete: true},
		{name: "task_complete YES padded", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": " YES "}`, complete: true},
		{name: "task_complete no", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": "no"}`, complete: false},
		{name: "task_complete string false", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": "false"}`, complete: false},
		{name: "task_complete number 1", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": 1}`, complete: true, noWarn: true},
		{name: "task_complete number 0", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": 0}`, complete: false, noWarn: true},
		{name: "task_complete number 2", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": 2}`, complete: true, warn: []string{"task_complete"}},
		{name: "task_complete null", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": null}`, complete: false, noWarn: true},
		{name: "task_complete list", in: `{"analysis": "a", "plan": "p", "commands": [], "task_complete": [true]}`, complete: false, warn: []string{"task_complete"}},
		{
			name:     "task_complete with commands not a list",
			in:       `{"analysis": "a", "plan": "p", "commands": "none", "task_complete": true}`,
			complete: true, cmds: []Command{}, warn: []string{"'commands' must be an array", "ignored because task_complete"},
		},
		{
			name:     "task_complete yes with bad entry",
			in:       `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": 1}, {"duration": 1}], "task_complete": "yes"}`,
			complete: true, cmds: []Command{}, warn: []string{"commands[1]", "ignored because task_complete"},
		},
		{
			name:     "task_complete 1 with bad duration",
			in:       `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": "soon"}], "task_complete": 1}`,
			complete: true, cmds: []Command{}, warn: []string{"'duration' must be a number"},
		},
		{
			name:    "task_complete false with bad entry is an error",
			in:      `{"analysis": "a", "plan": "p", "commands": [42], "task_complete": "no"}`,
			wantErr: "command 1 (commands[0]) must be an object",
		},
		{
			name:     "auto-fix plus prose before",
			in:       "Here:\n" + `{"analysis": "a", "plan": "p", "commands": [], "task_complete": true`,
			complete: true, cmds: []Command{}, warn: []string{"auto-corrected", "extra text before"},
		},
		{
			name:     "unicode content",
			in:       `{"analysis": "héllo ✓ 日本", "plan": "\u00e9", "commands": [{"keystrokes": "echo 日本\n", "duration": 0.25}]}`,
			analysis: "héllo ✓ 日本", plan: "é", cmds: []Command{{"echo 日本\n", 0.25}},
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse succeeded (%+v), want error containing %q", r, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErr)
				}
				if len(r.Commands) != 0 || r.TaskComplete {
					t.Fatalf("error reply carries commands/completion: %+v", r)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tc.analysis != "" && r.Analysis != tc.analysis {
				t.Errorf("Analysis = %q, want %q", r.Analysis, tc.analysis)
			}
			if tc.plan != "" && r.Plan != tc.plan {
				t.Errorf("Plan = %q, want %q", r.Plan, tc.plan)
			}
			if tc.cmds != nil && !reflect.DeepEqual(r.Commands, tc.cmds) {
				t.Errorf("Commands = %#v, want %#v", r.Commands, tc.cmds)
			}
			if r.Commands == nil {
				t.Errorf("Commands is nil on success")
			}
			if r.TaskComplete != tc.complete {
				t.Errorf("TaskComplete = %v, want %v", r.TaskComplete, tc.complete)
			}
			for _, w := range tc.warn {
				if !hasWarning(r.Warnings, w) {
					t.Errorf("no warning containing %q in %q", w, r.Warnings)
				}
			}
			if tc.noWarn && len(r.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", r.Warnings)
			}
		})
	}
}

func TestParseErrorKeepsWarnings(t *testing.T) {
	r, err := Parse("prose first " + `{"analysis": "a", "plan": "p", "commands": 5}`)
	if err == nil {
		t.Fatal("want error")
	}
	if !hasWarning(r.Warnings, "extra text before") {
		t.Errorf("warnings %q lack the extra-text warning", r.Warnings)
	}
	if r.Analysis != "a" || r.Plan != "p" {
		t.Errorf("Analysis/Plan not kept on error: %+v", r)
	}
}

func TestParseManyBraces(t *testing.T) {
	// Lots of candidate objects: must stay fast and fail cleanly.
	in := strings.Repeat(`{"a": `, 5000)
	if _, err := Parse(in); err == nil {
		t.Fatal("want error")
	}
	in = strings.Repeat(`{"x":1} `, 5000)
	if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "missing required") {
		t.Fatalf("err = %v", err)
	}
}

func TestKeySequence(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"C-c", "\x03"},
		{"C-d", "\x04"},
		{"C-z", "\x1a"},
		{"C-l", "\x0c"},
		{"C-u", "\x15"},
		{"C-a", "\x01"},
		{"C-C", "\x03"},
		{"c-c", "\x03"},
		{"^C", "\x03"},
		{"C-m", "\r"},
		{"C-j", "\n"},
		{"C-[", "\x1b"},
		{"C-\\", "\x1c"},
		{"C-]", "\x1d"},
		{"C-_", "\x1f"},
		{"C-@", "\x00"},
		{"C-Space", "\x00"},
		{"C-?", "\x7f"},
		{"Enter", "\n"},
		{"enter", "\n"},
		{"Escape", "\x1b"},
		{"Tab", "\t"},
		{"BTab", "\x1b[Z"},
		{"S-Tab", "\x1b[Z"},
		{"BSpace", "\x7f"},
		{"Space", " "},
		{"Up", "\x1b[A"},
		{"Down", "\x1b[B"},
		{"Right", "\x1b[C"},
		{"Left", "\x1b[D"},
		{"Home", "\x1b[H"},
		{"End", "\x1b[F"},
		{"DC", "\x1b[3~"},
		{"PageUp", "\x1b[5~"},
		{"NPage", "\x1b[6~"},
		{"F1", "\x1bOP"},
		{"F5", "\x1b[15~"},
		{"F12", "\x1b[24~"},
		{"C-Up", "\x1b[1;5A"},
		{"M-Left", "\x1b[1;3D"},
		{"S-F1", "\x1b[1;2P"},
		{"C-Delete", "\x1b[3;5~"},
		{"M-x", "\x1bx"},
		{"M-Enter", "\x1b\n"},
		{"M-é", "\x1bé"},
		{"C-M-c", "\x1b\x03"},
		{"M-C-c", "\x1b\x03"},
		{"S-a", "A"},
		// Not key names: verbatim.
		{"C-c\n", "C-c\n"},
		{" C-c", " C-c"},
		{"ls -la\n", "ls -la\n"},
		{"q", "q"},
		{"", ""},
		{"C-", "C-"},
		{"C-1", "C-1"},
		{"C-Enter", "C-Enter"},
		{"S-1", "S-1"},
		{"Enter\n", "Enter\n"},
		{"echo Up", "echo Up"},
		{"^", "^"},
		{"X-c", "X-c"},
		{"日本", "日本"},
	}
	for _, tc := range tests {
		if got := KeySequence(tc.in); !bytes.Equal(got, []byte(tc.want)) {
			t.Errorf("KeySequence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	marker := func(limit, omitted int) string {
		return "\n[... output limited to " + itoa(limit) + " bytes; " + itoa(omitted) + " interior bytes omitted ...]\n"
	}
	ascii := strings.Repeat("a", 6000) + strings.Repeat("b", 6345) // 12345 bytes

	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"short", "hello", 10, "hello"},
		{"exact", "0123456789", 10, "0123456789"},
		{"empty", "", 10, ""},
		{"no limit", ascii, 0, ascii},
		{"negative limit", "abc", -1, "abc"},
		{"ascii", "0123456789ABCDEF", 10, "01234" + marker(10, 6) + "BCDEF"},
		{"harbor size", ascii, ObservationLimit, ascii[:5000] + marker(10000, 2345) + ascii[len(ascii)-5000:]},
		// "é" is 2 bytes: the cuts at byte 3 and at byte 11 would split runes.
		{"two-byte runes", "aaéééééé", 6, "aa" + marker(6, 10) + "é"},
		{"cjk", "日本語テキスト", 8, "日" + marker(8, 15) + "ト"},
		{"emoji", "😀😀😀😀", 6, marker(6, 16)},
		{"emoji fits one each side", "😀😀😀😀", 8, "😀" + marker(8, 8) + "😀"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.in, tc.limit)
			if got != tc.want {
				t.Errorf("Truncate = %q\nwant       %q", got, tc.want)
			}
			if utf8.ValidString(tc.in) && !utf8.ValidString(got) {
				t.Errorf("result is not valid UTF-8: %q", got)
			}
		})
	}
}

func TestTruncateProperties(t *testing.T) {
	in := strings.Repeat("ab日本語😀é\n", 3000)
	for limit := 1; limit < 64; limit++ {
		got := Truncate(in, limit)
		if !utf8.ValidString(got) {
			t.Fatalf("limit %d: invalid UTF-8", limit)
		}
		i := strings.Index(got, "\n[... output limited")
		j := strings.Index(got, "...]\n")
		if i < 0 || j < 0 {
			t.Fatalf("limit %d: no marker in %q", limit, got)
		}
		head, tail := got[:i], got[j+len("...]\n"):]
		if len(head) > limit/2 || len(tail) > limit/2 || len(head) < limit/2-3 || len(tail) < limit/2-3 {
			t.Fatalf("limit %d: head %d tail %d bytes", limit, len(head), len(tail))
		}
		if !strings.HasPrefix(in, head) || !strings.HasSuffix(in, tail) {
			t.Fatalf("limit %d: head/tail are not a prefix/suffix", limit)
		}
		want := "interior bytes omitted"
		omitted := len(in) - len(head) - len(tail)
		if !strings.Contains(got, itoa(omitted)+" "+want) {
			t.Fatalf("limit %d: omitted count wrong in %q", limit, got[i:j])
		}
	}
	// Invalid UTF-8 (all continuation bytes) must not drift or panic.
	bad := strings.Repeat("\x80", 100)
	got := Truncate(bad, 10)
	if !strings.HasPrefix(got, strings.Repeat("\x80", 5)+"\n") || !strings.HasSuffix(got, "\n"+strings.Repeat("\x80", 5)) {
		t.Fatalf("invalid UTF-8: %q", got)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		`{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": 0.5}]}`,
		`{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": 1e999}], "task_complete": "yes"}`,
		`{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "x", "duration": -5}, {"keystrokes": "y"}]`,
		`prose {curly} {"analysis": "}", "plan": "\"{", "commands": "x", "task_complete": 1} tail`,
		`{"analysis": "a, "plan": "p"`,
		`}}}{{{`,
		`{"a":{"b":{"c":[{"d":"\\"}]}}}`,
		"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if len(r.Commands) != 0 || r.TaskComplete {
				t.Fatalf("error reply carries commands: %+v", r)
			}
			return
		}
		if r.Commands == nil {
			t.Fatalf("nil Commands on success")
		}
		for i, c := range r.Commands {
			if math.IsNaN(c.Duration) || c.Duration < 0 || c.Duration > MaxDuration {
				t.Fatalf("command %d duration %v out of [0,%v]", i, c.Duration, MaxDuration)
			}
		}
		_ = KeySequence(s)
		if out := Truncate(s, 16); utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Truncate broke UTF-8: %q", out)
		}
	})
}

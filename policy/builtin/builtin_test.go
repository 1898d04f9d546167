package builtin

import (
	"context"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/policy"
)

func firstPrompt(instr string) []policy.Message {
	return []policy.Message{{Role: policy.RoleUser, Content: "You are an AI assistant...\n\nTask Description:\n" + instr + "\n\nCurrent terminal state:\nroot@sandbox:/app# "}}
}

func TestCandidates(t *testing.T) {
	cases := []struct {
		instr string
		want  map[string][]string
	}{
		{"Count the number of lines in `/app/data/logs/app.log` and write only that number to `/output/result.txt`.",
			map[string][]string{slotIn: {"/app/data/logs/app.log", "/output/result.txt"}, slotOut: {"/app/data/logs/app.log", "/output/result.txt"}}},
		{"Count the `.py` files in `/app/data/project` and all of its subdirectories, and write the count to `/output/result.txt`.",
			map[string][]string{slotExt: {"py"}, slotDir: {"/app/data/project"}}},
		{"Write the first 7 lines of `/app/data/x.txt` to `/output/result.txt`.", map[string][]string{slotN: {"7"}}},
		{"List the three biggest files.", map[string][]string{slotN: {"3"}}},
		{"`/app/data/users.csv` is a comma-separated file with a header line `id,name,email,city`. Write the values of the `email` column.",
			map[string][]string{slotCol: {"3"}, slotPat: {"email"}}},
		{"List the distinct values of the `city` column (4th field) of `/app/data/u.csv`.", map[string][]string{slotCol: {"4"}}},
		{"Replace every occurrence of `foo` with `bar` in `/app/data/a.txt`.", map[string][]string{slotOld: {"foo", "bar"}}},
		{"Change the extension of all `.txt` files in `/app/data/notes` to `.md`.", map[string][]string{slotExt: {"txt", "md"}, slotExt2: {"txt", "md"}}},
	}
	for _, c := range cases {
		s := parseState(firstPrompt(c.instr))
		for kind, want := range c.want {
			var got []string
			for _, cd := range slotCandidates(s, kind, nil) {
				got = append(got, cd.Text)
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%q: %s candidates %q, want %q", c.instr, kind, got, want)
			}
		}
	}
}

// TestGreedyColdStart: the cold-start prior reads plain instructions right.
func TestGreedyColdStart(t *testing.T) {
	cases := []struct{ instr, cmd string }{
		{"Count the number of lines in `/app/data/app.log` and write only that number to `/output/result.txt`.", "wc -l < /app/data/app.log > /output/result.txt"},
		{"Write the last 5 lines of `/app/data/app.log` to `/output/result.txt`.", "tail -n 5 /app/data/app.log > /output/result.txt"},
		{"Convert all letters in `/app/data/a.txt` to upper case and write the result to `/output/result.txt`.", "tr '[:lower:]' '[:upper:]' < /app/data/a.txt > /output/result.txt"},
	}
	p := New(1)
	for _, c := range cases {
		comp, err := p.Complete(context.Background(), policy.Request{Messages: firstPrompt(c.instr)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(comp.Content, `"keystrokes":"`+c.cmd+`\n"`) {
			t.Errorf("%q:\n got %s\nwant keystrokes %q", c.instr, comp.Content, c.cmd)
		}
	}
}

// TestDeterministicAndReplayable: the same request samples the same reply,
// LogProb replays the reported log-probabilities exactly, and its gradient
// matches finite differences.
func TestDeterministicAndReplayable(t *testing.T) {
	p := New(7)
	msgs := firstPrompt("Replace every occurrence of `foo` with `bar` in `/app/data/a.txt` and write the result to `/output/b.txt`.")
	req := policy.Request{Messages: msgs, Sampling: policy.Sampling{Temperature: 1}, SessionID: "s1"}
	a, _ := p.Complete(context.Background(), req)
	b, _ := p.Complete(context.Background(), req)
	if a.Content != b.Content || len(a.TokenIDs) == 0 || len(a.TokenIDs) != len(a.Logprobs) {
		t.Fatalf("not deterministic or malformed: %+v vs %+v", a, b)
	}
	var sum float64
	for _, lp := range a.Logprobs {
		sum += lp
	}
	grad := Grad{}
	lp, err := p.LogProb(msgs, a.TokenIDs, 1, grad, 1)
	if err != nil || math.Abs(lp-sum) > 1e-9 {
		t.Fatalf("replay %g (%v), sampled %g", lp, err, sum)
	}
	// Finite differences on every feature the gradient touches.
	const h = 1e-5
	for k, g := range grad {
		old := p.w[k]
		p.w[k] = old + h
		up, _ := p.LogProb(msgs, a.TokenIDs, 1, nil, 0)
		p.w[k] = old - h
		down, _ := p.LogProb(msgs, a.TokenIDs, 1, nil, 0)
		p.w[k] = old
		if fd := (up - down) / (2 * h); math.Abs(fd-g) > 1e-5 {
			t.Errorf("feature %s: gradient %g, finite difference %g", k, g, fd)
		}
	}
	// Different sessions draw differently somewhere.
	differs := false
	for i := 0; i < 20 && !differs; i++ {
		c, _ := p.Complete(context.Background(), policy.Request{Messages: msgs, Sampling: policy.Sampling{Temperature: 1}, SessionID: string(rune('a' + i))})
		differs = c.Content != a.Content
	}
	if !differs {
		t.Error("20 sessions sampled the same reply at temperature 1")
	}
	// A gradient step on the sampled action makes it more likely.
	p.Update(grad, 0.5)
	after, _ := p.LogProb(msgs, a.TokenIDs, 1, nil, 0)
	if after <= lp {
		t.Errorf("log-probability %g after a step along its gradient, %g before", after, lp)
	}
	if p.Version() != 1 {
		t.Errorf("version %d", p.Version())
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	p := New(3)
	p.Update(Grad{"t:wc_lines|w=count": 2}, 0.5)
	path := t.TempDir() + "/policy.json"
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Weights(), ",") != strings.Join(q.Weights(), ",") || q.Version() != 1 {
		t.Fatalf("weights differ after a round trip")
	}
}

// TestEpisodeFlow: after acting the prior completes, and confirms.
func TestEpisodeFlow(t *testing.T) {
	p := New(1)
	msgs := firstPrompt("Count the number of lines in `/app/data/app.log` and write it to `/output/result.txt`.")
	c1, _ := p.Complete(context.Background(), policy.Request{Messages: msgs})
	msgs = append(msgs, policy.Message{Role: policy.RoleAssistant, Content: c1.Content}, policy.Message{Role: policy.RoleUser, Content: "New Terminal Output:\nroot@sandbox:/app# "})
	c2, _ := p.Complete(context.Background(), policy.Request{Messages: msgs})
	if !strings.Contains(c2.Content, `"task_complete":true`) {
		t.Errorf("after acting: %s", c2.Content)
	}
}

// TestProseWords: the learnt features see prose, not paths or literals,
// with negation marked and plurals and adverbs folded.
func TestProseWords(t *testing.T) {
	for _, tc := range []struct {
		in        string
		want, not []string
	}{
		{"How many files (not directories) does `/app/data/tree` contain?", []string{"file", "not_directory", "contain"}, []string{"directory", "tree", "app"}},
		{"Count, case-insensitively, the lines of `/app/data/app.log` that mention `retry`.", []string{"case", "insensitive", "line", "mention"}, []string{"retry", "log", "the"}},
		{"Write the values of the `city` column (without the header)", []string{"valu", "column", "not_header"}, []string{"city", "header"}},
		{"How many subdirectories exist?", []string{"subdirectory", "exist"}, nil},
	} {
		got := map[string]bool{}
		for _, w := range proseWords(tc.in) {
			got[w] = true
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("%q: missing %q in %v", tc.in, w, proseWords(tc.in))
			}
		}
		for _, w := range tc.not {
			if got[w] {
				t.Errorf("%q: unexpected %q in %v", tc.in, w, proseWords(tc.in))
			}
		}
	}
}

// TestUpdateAdaGrad: a weight's step is lr·g/√Σg², so a rare feature's
// first step is as big as a frequent one's, and the sums survive a
// checkpoint (a resumed run takes the same steps).
func TestUpdateAdaGrad(t *testing.T) {
	p := New(1)
	p.UpdateAdaGrad(Grad{"rare": 0.001, "common": 0.5}, 0.5)
	if r, c := p.w["rare"], p.w["common"]; math.Abs(r-0.5) > 1e-4 || math.Abs(c-0.5) > 1e-4 {
		t.Fatalf("first steps: rare %g common %g, want 0.5 each", r, c)
	}
	path := filepath.Join(t.TempDir(), "ck.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p.UpdateAdaGrad(Grad{"common": 0.5}, 0.5)
	q.UpdateAdaGrad(Grad{"common": 0.5}, 0.5)
	want := 0.5 + 0.5*0.5/math.Sqrt(0.5)
	if math.Abs(p.w["common"]-want) > 1e-6 || p.w["common"] != q.w["common"] {
		t.Errorf("second step: %g (restored %g), want %g", p.w["common"], q.w["common"], want)
	}
}

// sampledWarnTurn samples p's first turn on a shell task it has templates
// for, at temperature 1.
func sampledWarnTurn(t *testing.T, p *Policy) ([]policy.Message, policy.Completion) {
	t.Helper()
	msgs := firstPrompt("Count the lines of `/app/data/app.log` that contain `warn` in any letter case and write the count to `/output/result.txt`.")
	a, err := p.Complete(context.Background(), policy.Request{Messages: msgs, Sampling: policy.Sampling{Temperature: 1}, SessionID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	return msgs, a
}

// TestEntropyGradient checks Entropy's gradient against finite differences
// at a temperature other than 1, and that a step along it raises the
// entropy of the replayed choices.
func TestEntropyGradient(t *testing.T) {
	p := New(3)
	msgs, a := sampledWarnTurn(t, p)
	const T = 0.7
	grad := Grad{}
	h0, err := p.Entropy(msgs, a.TokenIDs, T, grad, 1)
	if err != nil || h0 <= 0 {
		t.Fatalf("entropy %g (%v)", h0, err)
	}
	const eps = 1e-5
	for k, g := range grad {
		old := p.w[k]
		p.w[k] = old + eps
		up, _ := p.Entropy(msgs, a.TokenIDs, T, nil, 0)
		p.w[k] = old - eps
		down, _ := p.Entropy(msgs, a.TokenIDs, T, nil, 0)
		p.w[k] = old
		if fd := (up - down) / (2 * eps); math.Abs(fd-g) > 1e-5 {
			t.Errorf("feature %s: gradient %g, finite difference %g", k, g, fd)
		}
	}
	p.Update(grad, 0.05)
	if h1, _ := p.Entropy(msgs, a.TokenIDs, T, nil, 0); h1 <= h0 {
		t.Errorf("entropy %g after a step along its gradient, %g before", h1, h0)
	}
}

// TestEntropyBelowFloor: decisions at or above the floor (a share of their
// maximum entropy) add nothing to the gradient; below it they add what
// Entropy adds.
func TestEntropyBelowFloor(t *testing.T) {
	p := New(3)
	msgs, a := sampledWarnTurn(t, p)
	const T = 1
	var shares []float64 // each decision's entropy over its maximum
	if err := p.replay(msgs, a.TokenIDs, T, func(d *decision, lp []float64, _ int) {
		var h float64
		for _, l := range lp {
			h -= math.Exp(l) * l
		}
		if len(lp) > 1 {
			shares = append(shares, h/math.Log(float64(len(lp))))
		}
	}); err != nil {
		t.Fatal(err)
	}
	sort.Float64s(shares)
	if len(shares) < 2 || shares[0] == shares[len(shares)-1] {
		t.Fatalf("need decisions of different entropy shares, got %v", shares)
	}
	full := Grad{}
	hFull, _ := p.Entropy(msgs, a.TokenIDs, T, full, 1)
	for _, tc := range []struct {
		name  string
		floor float64
		want  string // none, some, all
	}{
		{"floor 0", 0, "none"},
		{"between", (shares[0] + shares[len(shares)-1]) / 2, "some"},
		{"above every decision", 1.01, "all"},
	} {
		g := Grad{}
		h, err := p.EntropyBelow(msgs, a.TokenIDs, T, tc.floor, g, 1)
		if err != nil || h != hFull {
			t.Fatalf("%s: entropy %g, want %g (%v)", tc.name, h, hFull, err)
		}
		same := len(g) == len(full)
		for k, v := range g {
			if math.Abs(full[k]-v) > 1e-12 {
				same = false
			}
		}
		got := "some"
		switch {
		case len(g) == 0:
			got = "none"
		case same:
			got = "all"
		}
		if got != tc.want {
			t.Errorf("%s: gradient has %s of Entropy's, want %s", tc.name, got, tc.want)
		}
	}
}

// reachable renders every solve command the policy can emit in state s,
// walking the decision tree depth first.
func reachable(t *testing.T, s *state) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	var choices []int
	for {
		var widths []int
		a, err := walk(s, func(d *decision) int {
			k := len(widths)
			widths = append(widths, len(d.opts))
			if k == len(choices) {
				choices = append(choices, 0)
			}
			return choices[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		if a.kind == "solve" {
			out[a.cmd] = true
		}
		p := len(widths) - 1
		for p >= 0 && choices[p]+1 >= widths[p] {
			p--
		}
		if p < 0 {
			return out
		}
		choices = choices[:p+1]
		choices[p]++
	}
}

// TestVocabularyReaches: the phrasings that the earlier vocabulary could
// not solve at all are now within reach (each command below passed the
// generated task's verifier in a real sandbox). Reach is not choice:
// which command the policy picks is learnt.
func TestVocabularyReaches(t *testing.T) {
	cases := []struct{ instr, cmd string }{
		{"Rename each `*.log` file in `/app/data/logs` by prepending `old_` to its file name; do not touch files with other extensions.",
			`cd /app/data/logs && for f in *.log; do mv -- "$f" 'old_'"$f"; done`},
		{"Add the prefix `archived_` to the name of every `.log` file in `/app/data/logs` (e.g. `api.log` becomes `archived_api.log`). Other files keep their names.",
			`cd /app/data/logs && for f in *.log; do mv -- "$f" 'archived_'"$f"; done`},
		{"Change the extension of all `.txt` files in `/app/data/notes` to `.md`, keeping the rest of each name unchanged.",
			`cd /app/data/notes && for f in *.txt; do mv -- "$f" "${f%.txt}.md"; done`},
		{"List the distinct client IP addresses (first field) of `/app/data/access.log`, sorted in byte order, one per line, in `/output/result.txt`.",
			`awk '{print $1}' /app/data/access.log | LC_ALL=C sort -u > /output/result.txt`},
		{"Write the three biggest files of `/app/data/files` to `/output/result.txt`, one `name bytes` pair per line, sorted by size in decreasing order.",
			`find /app/data/files -maxdepth 1 -type f -printf '%s %f\n' | sort -k1,1nr | head -n 3 | awk '{print $2, $1}' > /output/result.txt`},
		{"Extract the `city` field from every data row of `/app/data/users.csv` (skip the header) and save them, one per line and in their original order, in `/output/result.txt`.",
			`awk -F, -v c='city' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } k { print $k }' /app/data/users.csv > /output/result.txt`},
		{"Package `/app/data/project` as `/output/source.tar.gz` (tar.gz, paths beginning with `project/`) but leave out all `.log` files.",
			`tar -czf /output/source.tar.gz -C /app/data/project/.. --exclude='*.log' $(basename /app/data/project)`},
		{"How many different words appear in `/app/data/text.txt`? Write the number to `/output/result.txt`.",
			`tr -s '[:space:]' '\n' < /app/data/text.txt | grep -v '^$' | LC_ALL=C sort -u | wc -l > /output/result.txt`},
	}
	for _, c := range cases {
		got := reachable(t, parseState(firstPrompt(c.instr)))
		if !got[c.cmd] {
			t.Errorf("%q: %d commands reachable, not\n%s", c.instr, len(got), c.cmd)
		}
	}
}

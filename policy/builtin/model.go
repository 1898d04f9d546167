package builtin

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// feat is one active feature of an option.
type feat struct {
	key string
	val float64
}

// decision is one categorical choice of a turn: its options and their
// features.
type decision struct {
	name  string
	opts  []string
	feats [][]feat
}

// action is a turn's choice, built by walk.
type action struct {
	kind     string // solve | explore | complete
	tmpl     *template
	cmd      string
	slots    map[string]string
	decision []decision
	chosen   []int
}

// coldStart are the initial weights: a small, documented prior that
// plays the role of the reference recipe's cold-start SFT. It reads the
// instruction the way any agent would (prefer a command whose manual
// description shares words with the task; write to the path the text
// says to write to; finish after acting) and knows nothing about any
// task's tests or solution. Everything else starts at 0 and is learnt.
var coldStart = map[string]float64{
	"prior:overlap": 1.2, // per instruction word found in the command's description

	"k:solve|solved=0":    3,
	"k:complete|solved=0": -2,
	"k:explore":           -1,
	"k:complete|solved=1": 3,
	"k:complete|solved=2": 3,
	"k:complete|confirm":  3,

	"s:OUT|prev=to":     2,
	"s:OUT|prev=into":   2,
	"s:OUT|prev=as":     2,
	"s:OUT|pos=last":    1,
	"s:IN|prev=to":      -2,
	"s:IN|prev=of":      1,
	"s:OLD|spos=0":      1.5,
	"s:NEW|spos=1":      1.5,
	"s:EXT2|epos=1":     1.5,
	"s:PAT|spos=0":      1,
	"s:PAT|has=eq":      -1,
	"s:DIR|pos=first":   0.5,
	"s:COL|from=header": 0.5,
}

// walk builds a turn's action from the state; choose picks an option of
// each decision (by sampling, by argmax, or by replaying recorded tokens)
// and returns -1 to abort (a replay that does not match).
func walk(s *state, choose func(d *decision) int) (*action, error) {
	a := &action{slots: map[string]string{}}
	pick := func(d decision) (int, error) {
		if len(d.opts) == 0 {
			return 0, fmt.Errorf("decision %s has no options", d.name)
		}
		i := choose(&d)
		if i < 0 || i >= len(d.opts) {
			return 0, fmt.Errorf("decision %s: choice %d out of %d options", d.name, i, len(d.opts))
		}
		a.decision = append(a.decision, d)
		a.chosen = append(a.chosen, i)
		return i, nil
	}

	solve, explore := applicable(s, solveTemplates), applicable(s, exploreTemplates)
	kinds := []string{"complete"}
	if len(solve) > 0 {
		kinds = append(kinds, "solve")
	}
	if len(explore) > 0 {
		kinds = append(kinds, "explore")
	}
	k, err := pick(kindDecision(s, kinds))
	if err != nil {
		return nil, err
	}
	a.kind = kinds[k]
	if a.kind == "complete" {
		return a, nil
	}
	tmpls := solve
	if a.kind == "explore" {
		tmpls = explore
	}
	t, err := pick(templateDecision(s, tmpls))
	if err != nil {
		return nil, err
	}
	a.tmpl = tmpls[t]
	for _, slot := range a.tmpl.Slots {
		cs := slotCandidates(s, slot, a.slots)
		c, err := pick(slotDecision(a.tmpl, slot, cs))
		if err != nil {
			return nil, err
		}
		a.slots[slot] = cs[c].Text
	}
	a.cmd = render(a.tmpl.Cmd, a.slots)
	return a, nil
}

// applicable are the templates whose every slot has a candidate.
func applicable(s *state, all []template) []*template {
	var out []*template
	for i := range all {
		t := &all[i]
		ok := true
		for _, slot := range t.Slots {
			if len(slotCandidates(s, slot, nil)) == 0 {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// slotCandidates are the values a slot may take; a slot that shares
// another's candidates (sharedSlots) is not offered the value chosen for
// the slot it avoids (the input as the output, ...) when there is another
// choice.
func slotCandidates(s *state, slot string, chosen map[string]string) []cand {
	from, avoidSlot := slot, ""
	if sh, ok := sharedSlots[slot]; ok {
		from, avoidSlot = sh.from, sh.avoid
	}
	cs := s.cands[from]
	avoid := ""
	if avoidSlot != "" {
		avoid = chosen[avoidSlot]
	}
	if avoid == "" {
		return cs
	}
	var out []cand
	for _, c := range cs {
		if c.Text != avoid {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cs
	}
	return out
}

func kindDecision(s *state, kinds []string) decision {
	d := decision{name: "kind", opts: kinds}
	lastKind := "none"
	switch {
	case s.last == "complete":
		lastKind = "complete"
	case isExplore(s.last):
		lastKind = "explore"
	case s.last != "":
		lastKind = "solve"
	}
	for _, k := range kinds {
		p := "k:" + k
		fs := []feat{{p, 1}, {p + "|solved=" + strconv.Itoa(min(s.solved, 2)), 1},
			{p + "|turn=" + strconv.Itoa(min(s.turn, 5)), 1}, {p + "|last=" + lastKind, 1}}
		if s.confirm {
			fs = append(fs, feat{p + "|confirm", 1})
		}
		if s.lastErr {
			fs = append(fs, feat{p + "|lasterr", 1})
		}
		if s.parseErr {
			fs = append(fs, feat{p + "|parseerr", 1})
		}
		d.feats = append(d.feats, fs)
	}
	return d
}

func templateDecision(s *state, tmpls []*template) decision {
	d := decision{name: "template"}
	for _, t := range tmpls {
		d.opts = append(d.opts, t.ID)
		p := "t:" + t.ID
		fs := []feat{{p, 1}}
		for _, w := range s.words {
			fs = append(fs, feat{p + "|w=" + w, 1})
		}
		for _, e := range s.pathExts {
			fs = append(fs, feat{p + "|pext=" + e, 1})
		}
		if s.lastErr {
			fs = append(fs, feat{p + "|lasterr", 1})
		}
		if t.ID == s.last {
			fs = append(fs, feat{p + "|again", 1})
		}
		if n := overlap(s.stems, t.ID); n > 0 {
			fs = append(fs, feat{"prior:overlap", float64(n)})
		}
		d.feats = append(d.feats, fs)
	}
	return d
}

func slotDecision(t *template, slot string, cs []cand) decision {
	d := decision{name: "slot:" + slot}
	for _, c := range cs {
		d.opts = append(d.opts, c.Text)
		fs := []feat{{"s:" + slot + "|" + t.ID, 1}}
		for _, f := range c.Feats {
			fs = append(fs, feat{"s:" + slot + "|" + f, 1}, feat{"s:" + slot + "|" + t.ID + "|" + f, 1})
		}
		d.feats = append(d.feats, fs)
	}
	return d
}

// docStems are the stems of each template's description, by template id
// (derived once from the constant tables).
var docStems = func() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, ts := range [][]template{solveTemplates, exploreTemplates} {
		for _, t := range ts {
			set := map[string]bool{}
			for _, w := range stems(t.Doc) {
				set[w] = true
			}
			out[t.ID] = set
		}
	}
	return out
}()

// overlap counts the instruction stems found in a template's description.
func overlap(instr []string, id string) int {
	set := docStems[id]
	n := 0
	for _, w := range instr {
		if set[w] {
			n++
		}
	}
	return n
}

// render fills a command template, quoting what needs it.
func render(cmd string, slots map[string]string) string {
	pairs := make([]string, 0, 2*len(slots))
	keys := make([]string, 0, len(slots))
	for k := range slots {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := slots[k]
		switch k {
		case slotOld:
			v = sedPattern(v)
		case slotNew:
			v = sedReplacement(v)
		}
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(cmd)
}

func sedPattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\/.*[]^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func sedReplacement(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\/&`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// softmax returns the log-probabilities of scores at temperature T > 0.
func logSoftmax(scores []float64, T float64) []float64 {
	out := make([]float64, len(scores))
	mx := math.Inf(-1)
	for i, s := range scores {
		out[i] = s / T
		mx = math.Max(mx, out[i])
	}
	var z float64
	for _, v := range out {
		z += math.Exp(v - mx)
	}
	lz := mx + math.Log(z)
	for i := range out {
		out[i] -= lz
	}
	return out
}

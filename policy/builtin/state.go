package builtin

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/otcurate/otcurate/policy"
)

// cand is a value a slot can take, with features describing where it was
// found.
type cand struct {
	Text  string
	Feats []string
}

// state is what the policy sees: only the conversation (the task's
// instruction and the terminal), never tests/ or solution/.
type state struct {
	stems    []string          // distinct word stems of the instruction (the cold-start prior's view)
	words    []string          // distinct prose words, negation-marked (the learnt features' view; see proseWords)
	pathExts []string          // distinct extensions of the file paths the instruction names (a learnt feature: a .csv asks for other commands than a .log)
	cands    map[string][]cand // by slot kind; a shared slot reads its source's (sharedSlots)
	turn     int               // assistant messages so far
	confirm  bool              // the harness asks to confirm completion
	parseErr bool              // the last reply did not parse
	lastErr  bool              // the last observation shows an error
	solved   int               // solve actions taken
	explored int               // explore actions taken
	last     string            // previous action id ("" at the start)
}

var (
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	extSpan    = regexp.MustCompile(`^\*?\.[A-Za-z0-9]+$`) // `.log`, `*.txt`
	numberRe   = regexp.MustCompile(`\b\d+\b`)
	ordinalRe  = regexp.MustCompile(`\b(\d+)(?:st|nd|rd|th)\b|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)\s+(?:column|field)`)
	wordRe     = regexp.MustCompile(`[A-Za-z][A-Za-z-]*`)
	errorWords = regexp.MustCompile(`(?i)no such file|not found|permission denied|syntax error|invalid option|unrecognized option|cannot |error:`)
)

var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}

// instructionOf finds the task text in the harness's first prompt.
func instructionOf(first string) string {
	const open, close = "Task Description:\n", "\n\nCurrent terminal state:"
	i := strings.Index(first, open)
	if i < 0 {
		return first
	}
	rest := first[i+len(open):]
	if j := strings.LastIndex(rest, close); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// parseState reads the conversation.
func parseState(msgs []policy.Message) *state {
	s := &state{cands: map[string][]cand{}}
	if len(msgs) == 0 {
		return s
	}
	instr := instructionOf(msgs[0].Content)
	s.stems = stems(instr)
	s.words = proseWords(instr)
	extractCandidates(s, instr)
	for _, m := range msgs[1:] {
		if m.Role != policy.RoleAssistant {
			continue
		}
		s.turn++
		id := actionID(m.Content)
		switch {
		case id == "complete":
		case isExplore(id):
			s.explored++
		case id != "":
			s.solved++
		}
		s.last = id
	}
	if last := msgs[len(msgs)-1]; last.Role == policy.RoleUser && len(msgs) > 1 {
		s.confirm = strings.Contains(last.Content, "Are you sure you want to mark the task as complete?")
		s.parseErr = strings.HasPrefix(last.Content, "Previous response had parsing errors")
		s.lastErr = errorWords.MatchString(last.Content)
	}
	return s
}

// actionID recovers the action of one of the policy's own replies from
// its "plan" field ("<id>: <doc>").
func actionID(reply string) string {
	var r struct {
		Plan string `json:"plan"`
	}
	if json.Unmarshal([]byte(reply), &r) != nil {
		return ""
	}
	id, _, _ := strings.Cut(r.Plan, ":")
	return id
}

func isExplore(id string) bool {
	for _, t := range exploreTemplates {
		if t.ID == id {
			return true
		}
	}
	return false
}

// extractCandidates fills s.cands from the instruction's code spans,
// numbers and CSV headers.
func extractCandidates(s *state, instr string) {
	spans := codeSpan.FindAllStringSubmatchIndex(instr, -1)
	var paths, literals []int // indexes into spans
	var headers [][]string
	for i, m := range spans {
		text := instr[m[2]:m[3]]
		switch {
		case strings.HasPrefix(text, "/"):
			paths = append(paths, i)
		case extSpan.MatchString(text):
			ext := strings.TrimLeft(text, "*.")
			epos := "epos=" + strconv.Itoa(min(len(s.cands[slotExt]), 2))
			add(s, slotExt, ext, "from=span", epos)
		case strings.Contains(text, ",") && !strings.Contains(text, " "):
			headers = append(headers, strings.Split(text, ","))
		default:
			literals = append(literals, i)
		}
	}
	prevWord := func(i int) string {
		before := strings.TrimRight(instr[:spans[i][0]], " (")
		w := wordRe.FindAllString(before, -1)
		if len(w) == 0 {
			return "^"
		}
		return strings.ToLower(w[len(w)-1])
	}
	for k, i := range paths {
		text := instr[spans[i][2]:spans[i][3]]
		text = strings.TrimRight(text, "/")
		pos := "mid"
		switch {
		case len(paths) == 1:
			pos = "only"
		case k == 0:
			pos = "first"
		case k == len(paths)-1:
			pos = "last"
		}
		base := text[strings.LastIndex(text, "/")+1:]
		top := strings.SplitN(strings.TrimPrefix(text, "/"), "/", 2)[0]
		feats := []string{"pos=" + pos, "prev=" + prevWord(i), "top=" + top}
		if strings.Contains(base, ".") {
			ext := base[strings.LastIndex(base, ".")+1:]
			feats = append(feats, "ext="+ext)
			if !slices.Contains(s.pathExts, ext) {
				s.pathExts = append(s.pathExts, ext)
			}
			add(s, slotIn, text, feats...)
		} else {
			add(s, slotDir, text, feats...)
		}
	}
	for k, i := range literals {
		text := instr[spans[i][2]:spans[i][3]]
		if strings.ContainsAny(text, "'\n") || len(text) > 64 {
			continue
		}
		feats := []string{"spos=" + strconv.Itoa(min(k, 3)), "prev=" + prevWord(i)}
		if strings.Contains(text, "=") {
			feats = append(feats, "has=eq")
		}
		if strings.Contains(text, " ") {
			feats = append(feats, "has=space")
		}
		add(s, slotPat, text, feats...)
		for _, h := range headers {
			for j, f := range h {
				if f == text {
					add(s, slotCol, strconv.Itoa(j+1), "from=header")
				}
			}
		}
	}
	plain := codeSpan.ReplaceAllString(instr, " ")
	for _, n := range numberRe.FindAllString(plain, -1) {
		add(s, slotN, n, "from=digits")
	}
	for _, w := range wordRe.FindAllString(strings.ToLower(plain), -1) {
		if n, ok := numberWords[w]; ok && n > 1 {
			add(s, slotN, strconv.Itoa(n), "from=word")
		}
	}
	for _, m := range ordinalRe.FindAllStringSubmatch(strings.ToLower(instr), -1) {
		n := m[1]
		if n == "" {
			n = strconv.Itoa(numberWords[m[2]])
		}
		add(s, slotCol, n, "from=ordinal")
	}
}

// add appends a candidate unless its text is already there.
func add(s *state, kind, text string, feats ...string) {
	for _, c := range s.cands[kind] {
		if c.Text == text {
			return
		}
	}
	s.cands[kind] = append(s.cands[kind], cand{Text: text, Feats: feats})
}

var stopwords = map[string]bool{"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"it": true, "its": true, "is": true, "be": true, "that": true, "this": true, "with": true, "as": true, "on": true, "by": true,
	"for": true, "from": true, "each": true, "every": true, "one": true, "per": true, "e": true, "g": true, "into": true,
	"write": true, "save": true, "file": true, "result": true, "txt": true, "output": true, "app": true, "data": true}

// negators mark the next content word as negated ("files (not
// directories)", "without the header").
var negators = map[string]bool{"not": true, "no": true, "without": true, "excluding": true, "except": true, "never": true}

// functionWords carry no meaning for the learnt features.
var functionWords = map[string]bool{"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"it": true, "its": true, "is": true, "be": true, "that": true, "this": true, "with": true, "as": true, "on": true, "by": true,
	"for": true, "from": true, "into": true, "e": true, "g": true, "do": true, "does": true}

// proseWords are the words the learnt template features see: the
// instruction's prose only (code spans are paths and literals: slot
// candidates, not meaning), stemmed a little better than stems (plural
// -ies, adverbs in -ly), a word after a negator marked "not_", function
// words dropped. Kept apart from stems so the cold-start prior, and with
// it the lr=0 control, is unchanged.
func proseWords(text string) []string {
	prose := codeSpan.ReplaceAllString(strings.ToLower(text), " ")
	seen := map[string]bool{}
	var out []string
	negate := false
	for _, w := range wordRe.FindAllString(prose, -1) {
		for _, part := range strings.Split(w, "-") {
			switch {
			case part == "":
				continue
			case negators[part]:
				negate = true
				continue
			case functionWords[part]:
				continue
			}
			st := stem2(part)
			if negate {
				st, negate = "not_"+st, false
			}
			if !seen[st] {
				seen[st] = true
				out = append(out, st)
			}
		}
	}
	return out
}

// stem2 is stem with -ies → -y and -ly dropped.
func stem2(w string) string {
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 5 && strings.HasSuffix(w, "ly"):
		w = w[:len(w)-2]
	}
	return stem(w)
}

// stems are the instruction's distinct content words, crudely stemmed.
func stems(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range wordRe.FindAllString(strings.ToLower(text), -1) {
		for _, part := range strings.Split(w, "-") {
			st := stem(part)
			if st == "" || stopwords[part] || stopwords[st] || seen[st] {
				continue
			}
			seen[st] = true
			out = append(out, st)
		}
	}
	return out
}

func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// Package terminus implements the reply side of Harbor's terminus-2 JSON
// protocol (src/harbor/agents/terminus_2/terminus_json_plain_parser.py):
// parsing a model answer into commands, translating tmux key names for a raw
// terminal, and truncating terminal observations.
//
// A reply is a JSON object
//
//	{"analysis": "...", "plan": "...",
//	 "commands": [{"keystrokes": "ls -la\n", "duration": 0.5}],
//	 "task_complete": false}
//
// Parse is lenient in the same places as Harbor: prose around the object is
// tolerated (with a warning), a missing closing brace is auto-corrected, and a
// valid reply embedded later in mixed content is extracted (with an
// "auto-corrected" warning). When Parse returns an error nothing must be
// executed; the error text (plus the returned Warnings) is the next prompt.
//
// Deliberate differences from Harbor, all in the direction of the brief this
// package was written against:
//   - a non-number duration is an error (Harbor: warning, default 1.0);
//     a JSON null duration is treated as missing (default 1.0, warning);
//   - durations are clamped to [0, MaxDuration] here (Harbor caps in the agent);
//   - if task_complete is true, a "commands" value that is not an array is
//     downgraded to a warning as well (Harbor only downgrades entry errors);
//   - brace matching only honours backslash escapes inside strings;
//   - the field-order warning (analysis → plan → commands) is not emitted.
package terminus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultDuration is the wait (seconds) used when a command has no duration.
const DefaultDuration = 1.0

// MaxDuration caps a command's duration (seconds).
const MaxDuration = 60.0

// maxFallbackCandidates bounds the mixed-content search so that a huge reply
// full of braces cannot make Parse quadratic in practice.
const maxFallbackCandidates = 64

// Command is one batch entry of a reply.
type Command struct {
	Keystrokes string  `json:"keystrokes"`
	Duration   float64 `json:"duration"`
}

// Reply is a parsed model answer.
//
// On success Commands is non-nil (possibly empty, meaning "just wait") unless
// TaskComplete is true and the commands were broken, in which case Commands
// is empty and the problems are in Warnings. On error only Warnings (and,
// when the object was readable, Analysis and Plan) are meaningful.
type Reply struct {
	Analysis, Plan string
	Commands       []Command
	TaskComplete   bool
	Warnings       []string
}

// Parse parses a model reply. err != nil means nothing is executed and the
// error text is fed back to the model as the next prompt.
//
// The first '{' in text starts the candidate object; its end is found by
// string-aware brace matching (braces inside JSON strings, and escaped quotes,
// do not count). If that object is unbalanced, the missing '}' are appended
// and the result parsed ("auto-corrected" warning). If the first candidate
// still fails, later '{' positions that look like the start of an object
// (followed by '"' or '}') are tried in order; the first one that parses and
// validates is used ("auto-corrected" warning). Otherwise the error of the
// first candidate is returned.
func Parse(text string) (Reply, error) {
	start := strings.IndexByte(text, '{')
	if start < 0 {
		return Reply{}, errors.New("no JSON object found in response; reply with a single JSON object containing \"analysis\", \"plan\" and \"commands\"")
	}

	end, depth, inString := matchObject(text, start)
	var (
		first    Reply
		firstErr error
	)
	if end >= 0 {
		first, firstErr = parseCandidate(text, start, end, text[start:end])
		if firstErr == nil {
			return first, nil
		}
	} else {
		missing := depth
		if inString {
			firstErr = fmt.Errorf("incomplete JSON object: unterminated string and %d closing brace(s) missing", missing)
		} else {
			obj := text[start:] + strings.Repeat("}", missing)
			r, err := parseCandidate(text, start, len(text), obj)
			if err == nil {
				r.Warnings = append([]string{fmt.Sprintf("auto-corrected: added %d missing closing brace(s) to the JSON object; please fix this in future responses", missing)}, r.Warnings...)
				return r, nil
			}
			first = r
			firstErr = fmt.Errorf("incomplete JSON object (%d closing brace(s) missing) and auto-fix failed: %w", missing, err)
		}
	}

	// Mixed content: look for a later object that parses on its own.
	tried := 0
	for p := start + 1; p < len(text) && tried < maxFallbackCandidates; p++ {
		if text[p] != '{' || !looksLikeObjectStart(text, p) {
			continue
		}
		tried++
		e, d, inStr := matchObject(text, p)
		var obj string
		switch {
		case e >= 0:
			obj = text[p:e]
		case !inStr:
			obj = text[p:] + strings.Repeat("}", d)
			e = len(text)
		default:
			continue
		}
		if !json.Valid([]byte(obj)) {
			continue
		}
		r, err := parseCandidate(text, p, e, obj)
		if err == nil {
			r.Warnings = append([]string{"auto-corrected: extracted the JSON object from mixed content; please reply with the JSON object only"}, r.Warnings...)
			return r, nil
		}
	}
	return Reply{Analysis: first.Analysis, Plan: first.Plan, Warnings: first.Warnings}, firstErr
}

// matchObject scans text from the '{' at start. It returns the index just
// past the matching '}' (end), or end = -1 together with the open depth and
// whether the scan ended inside a string.
func matchObject(text string, start int) (end, depth int, inString bool) {
	escaped := false
	for i := start; i < len(text); i++ {
		c := text[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i + 1, 0, false
			}
		}
	}
	return -1, depth, inString
}

// looksLikeObjectStart reports whether the '{' at p is followed (after
// whitespace) by '"' or '}', i.e. could start a JSON object.
func looksLikeObjectStart(text string, p int) bool {
	for i := p + 1; i < len(text); i++ {
		switch text[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '"', '}':
			return true
		default:
			return false
		}
	}
	return false
}

// parseCandidate decodes and validates obj, which was found at
// text[start:end] (end may be len(text) for an auto-closed object).
func parseCandidate(text string, start, end int, obj string) (Reply, error) {
	var r Reply
	if strings.TrimSpace(text[:start]) != "" {
		r.Warnings = append(r.Warnings, "extra text before JSON object (ignored)")
	}
	if end < len(text) && strings.TrimSpace(text[end:]) != "" {
		r.Warnings = append(r.Warnings, "extra text after JSON object (ignored)")
	}

	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(obj), &fields); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return r, fmt.Errorf("invalid JSON: %v (at byte %d of the JSON object)", err, se.Offset)
		}
		return r, fmt.Errorf("invalid JSON: %v", err)
	}

	var missing []string
	for _, f := range []string{"analysis", "plan", "commands"} {
		if _, ok := fields[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return r, fmt.Errorf("missing required field(s): %s", strings.Join(missing, ", "))
	}

	r.Analysis = stringField(fields, "analysis", &r.Warnings)
	r.Plan = stringField(fields, "plan", &r.Warnings)
	r.TaskComplete = taskComplete(fields["task_complete"], &r.Warnings)

	cmds, err := parseCommands(fields["commands"], &r.Warnings)
	if err != nil {
		if r.TaskComplete {
			r.Warnings = append(r.Warnings, err.Error()+" (ignored because task_complete is true)")
			r.Commands = []Command{}
			return r, nil
		}
		return r, err
	}
	r.Commands = cmds
	return r, nil
}

// kind names the JSON type of a raw value.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// stringField returns a string field; a non-string value is kept as its JSON
// text (null as "") and produces a warning, as in Harbor.
func stringField(fields map[string]json.RawMessage, name string, warnings *[]string) string {
	raw := fields[name]
	var s string
	if kind(raw) == "string" && json.Unmarshal(raw, &s) == nil {
		return s
	}
	*warnings = append(*warnings, fmt.Sprintf("field '%s' should be a string (got %s)", name, kind(raw)))
	if kind(raw) == "null" {
		return ""
	}
	return string(bytes.TrimSpace(raw))
}

// taskComplete interprets the optional task_complete field: a boolean; the
// strings "true", "1", "yes" (case-insensitive, surrounding space ignored)
// as true and any other string as false; the numbers 1 and 0 (any other
// number: non-zero is true, with a warning); null or absent as false; any
// other type as false with a warning.
func taskComplete(raw json.RawMessage, warnings *[]string) bool {
	if raw == nil {
		return false
	}
	switch kind(raw) {
	case "boolean":
		var b bool
		_ = json.Unmarshal(raw, &b)
		return b
	case "string":
		var s string
		_ = json.Unmarshal(raw, &s)
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "1", "yes":
			return true
		}
		return false
	case "number":
		f, _ := parseNumber(raw)
		if f != 0 && f != 1 {
			*warnings = append(*warnings, "field 'task_complete' should be a boolean (got the number "+string(bytes.TrimSpace(raw))+")")
		}
		return f != 0
	case "null":
		return false
	default:
		*warnings = append(*warnings, fmt.Sprintf("field 'task_complete' should be a boolean (got %s); treated as false", kind(raw)))
		return false
	}
}

// parseNumber parses a JSON number. Out-of-range values become ±Inf (or 0
// on underflow) instead of failing.
func parseNumber(raw json.RawMessage) (float64, error) {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	var ne *strconv.NumError
	if err != nil && errors.As(err, &ne) && ne.Err == strconv.ErrRange {
		return f, nil
	}
	return f, err
}

// parseCommands validates the commands array. The first bad entry is an
// error naming it as "command N (commands[N-1])".
func parseCommands(raw json.RawMessage, warnings *[]string) ([]Command, error) {
	if kind(raw) != "array" {
		return nil, fmt.Errorf("field 'commands' must be an array (got %s)", kind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("field 'commands' must be an array: %v", err)
	}
	cmds := make([]Command, 0, len(items))
	warns := *warnings
	defer func() { *warnings = warns }()
	for i, item := range items {
		name := fmt.Sprintf("command %d (commands[%d])", i+1, i)
		if kind(item) != "object" {
			return nil, fmt.Errorf("%s must be an object (got %s)", name, kind(item))
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(item, &m); err != nil {
			return nil, fmt.Errorf("%s must be an object: %v", name, err)
		}
		ksRaw, ok := m["keystrokes"]
		if !ok {
			return nil, fmt.Errorf("%s is missing required field 'keystrokes'", name)
		}
		var ks string
		if kind(ksRaw) != "string" || json.Unmarshal(ksRaw, &ks) != nil {
			return nil, fmt.Errorf("%s: 'keystrokes' must be a string (got %s)", name, kind(ksRaw))
		}

		dur := DefaultDuration
		dRaw, ok := m["duration"]
		switch {
		case !ok || kind(dRaw) == "null":
			warns = append(warns, fmt.Sprintf("%s: missing 'duration', using default %.1f", name, DefaultDuration))
		case kind(dRaw) != "number":
			return nil, fmt.Errorf("%s: 'duration' must be a number of seconds (got %s)", name, kind(dRaw))
		default:
			f, err := parseNumber(dRaw)
			if err != nil {
				return nil, fmt.Errorf("%s: 'duration' must be a number of seconds: %v", name, err)
			}
			switch {
			case f < 0 || math.IsNaN(f):
				warns = append(warns, fmt.Sprintf("%s: negative duration %s replaced by 0", name, bytes.TrimSpace(dRaw)))
				f = 0
			case f > MaxDuration:
				warns = append(warns, fmt.Sprintf("%s: duration %s capped at %g seconds", name, bytes.TrimSpace(dRaw), MaxDuration))
				f = MaxDuration
			}
			dur = f
		}

		var unknown []string
		for k := range m {
			if k != "keystrokes" && k != "duration" {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			warns = append(warns, fmt.Sprintf("%s: unknown field(s) ignored: %s", name, strings.Join(unknown, ", ")))
		}
		if i < len(items)-1 && !strings.HasSuffix(ks, "\n") {
			warns = append(warns, fmt.Sprintf("%s should end with a newline when followed by another command; otherwise the two commands are concatenated on the same line", name))
		}
		cmds = append(cmds, Command{Keystrokes: ks, Duration: dur})
	}
	return cmds, nil
}

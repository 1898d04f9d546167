package terminus

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// KeySequence translates the keystrokes of one command into the bytes to
// write to a raw terminal (a pty), the way `tmux send-keys` would.
//
// When the whole keystrokes string, exactly (no trimming; "C-c\n" is not a
// key name), is a tmux key name, the corresponding byte sequence is returned.
// Otherwise the keystrokes are returned verbatim, as tmux does for strings it
// cannot look up.
//
// Recognised, case-insensitively like tmux:
//   - modifier prefixes "C-" (or a leading "^"), "M-" and "S-", combinable
//     ("C-M-x");
//   - C-<char>: a..z (either case) → 0x01..0x1a (C-c → 0x03, C-d → 0x04,
//     C-z → 0x1a), C-@ and C-Space → 0x00, C-[ → 0x1b, C-\ → 0x1c,
//     C-] → 0x1d, C-^ → 0x1e, C-_ → 0x1f, C-? → 0x7f;
//   - M-<key> → ESC followed by the key (any single character, or one of
//     Enter/Escape/Tab/BSpace/Space); S-<letter> → the upper-case letter;
//   - Enter → "\n" (a pty in cooked mode maps both "\r" and "\n" to a
//     newline; use C-m for a literal "\r"), Escape → 0x1b, Tab → "\t",
//     BTab → ESC [ Z, BSpace → 0x7f, Space → " ";
//   - Up/Down/Right/Left → ESC [ A/B/C/D (normal cursor mode), Home → ESC [ H,
//     End → ESC [ F, IC/Insert → ESC [ 2 ~, DC/Delete → ESC [ 3 ~,
//     PageUp/PPage/PgUp → ESC [ 5 ~, PageDown/NPage/PgDn → ESC [ 6 ~,
//     F1..F12 (xterm sequences). With C-/M-/S- these use the xterm modifier
//     parameter, e.g. C-Up → ESC [ 1 ; 5 A.
//
// Combinations that a raw terminal cannot express (e.g. C-1) are not key
// names and are therefore sent verbatim.
func KeySequence(keystrokes string) []byte {
	if seq, ok := lookupKey(keystrokes); ok {
		return []byte(seq)
	}
	return []byte(keystrokes)
}

const (
	modCtrl = 1 << iota
	modMeta
	modShift
)

// cursor keys: final byte of ESC [ <final>, modified as ESC [ 1 ; m <final>.
var cursorKeys = map[string]byte{
	"up": 'A', "down": 'B', "right": 'C', "left": 'D', "home": 'H', "end": 'F',
}

// tilde keys: ESC [ n ~, modified as ESC [ n ; m ~.
var tildeKeys = map[string]int{
	"ic": 2, "insert": 2, "dc": 3, "delete": 3,
	"pageup": 5, "ppage": 5, "pgup": 5, "pagedown": 6, "npage": 6, "pgdn": 6,
	"f5": 15, "f6": 17, "f7": 18, "f8": 19, "f9": 20, "f10": 21, "f11": 23, "f12": 24,
}

// ss3 keys: ESC O <final>, modified as ESC [ 1 ; m <final>.
var ss3Keys = map[string]byte{"f1": 'P', "f2": 'Q', "f3": 'R', "f4": 'S'}

// simple keys: fixed bytes; only M- applies (as an ESC prefix).
var simpleKeys = map[string]string{
	"enter": "\n", "escape": "\x1b", "tab": "\t", "btab": "\x1b[Z",
	"bspace": "\x7f", "space": " ",
}

func lookupKey(s string) (string, bool) {
	mods := 0
	rest := s
	if len(rest) >= 2 && rest[0] == '^' {
		mods |= modCtrl
		rest = rest[1:]
	}
prefixes:
	for len(rest) > 2 && rest[1] == '-' {
		switch rest[0] {
		case 'C', 'c':
			mods |= modCtrl
		case 'M', 'm':
			mods |= modMeta
		case 'S', 's':
			mods |= modShift
		default:
			break prefixes
		}
		rest = rest[2:]
	}
	if mods == 0 && len(rest) <= 1 {
		return "", false // a plain character: verbatim
	}
	name := strings.ToLower(rest)
	if b, ok := cursorKeys[name]; ok {
		if m := xtermMod(mods); m > 1 {
			return "\x1b[1;" + strconv.Itoa(m) + string(b), true
		}
		return "\x1b[" + string(b), true
	}
	if n, ok := tildeKeys[name]; ok {
		if m := xtermMod(mods); m > 1 {
			return "\x1b[" + strconv.Itoa(n) + ";" + strconv.Itoa(m) + "~", true
		}
		return "\x1b[" + strconv.Itoa(n) + "~", true
	}
	if b, ok := ss3Keys[name]; ok {
		if m := xtermMod(mods); m > 1 {
			return "\x1b[1;" + strconv.Itoa(m) + string(b), true
		}
		return "\x1bO" + string(b), true
	}
	if seq, ok := simpleKeys[name]; ok {
		switch {
		case name == "space" && mods&modCtrl != 0 && mods&modShift == 0:
			seq = "\x00"
		case name == "tab" && mods&modShift != 0 && mods&modCtrl == 0:
			seq = "\x1b[Z"
		case mods&^modMeta != 0:
			return "", false
		}
		if mods&modMeta != 0 {
			seq = "\x1b" + seq
		}
		return seq, true
	}
	if mods == modMeta && utf8.RuneCountInString(rest) == 1 && rest[0] >= utf8.RuneSelf {
		return "\x1b" + rest, true // M-<non-ASCII character>
	}
	if len(rest) != 1 {
		return "", false
	}
	c := rest[0]
	if mods&modShift != 0 {
		if mods&modCtrl != 0 || !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
		if c >= 'a' {
			c -= 'a' - 'A'
		}
	}
	if mods&modCtrl != 0 {
		switch {
		case c >= 'a' && c <= 'z':
			c = c - 'a' + 1
		case c >= 'A' && c <= 'Z':
			c = c - 'A' + 1
		case c == '@' || c == ' ':
			c = 0
		case c >= '[' && c <= '_':
			c = c - '[' + 0x1b
		case c == '?':
			c = 0x7f
		default:
			return "", false
		}
	}
	seq := string([]byte{c})
	if mods&modMeta != 0 {
		seq = "\x1b" + seq
	}
	return seq, true
}

// xtermMod is the xterm modifier parameter (1 = none).
func xtermMod(mods int) int {
	m := 1
	if mods&modShift != 0 {
		m++
	}
	if mods&modMeta != 0 {
		m += 2
	}
	if mods&modCtrl != 0 {
		m += 4
	}
	return m
}

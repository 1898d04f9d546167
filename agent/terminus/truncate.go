package terminus

import (
	"fmt"
	"unicode/utf8"
)

// ObservationLimit is Harbor's limit (bytes) on one terminal observation.
const ObservationLimit = 10000

// Truncate limits a terminal observation to about limit bytes the way
// Harbor's terminus-2 does: if out is longer than limit, the first limit/2
// and the last limit/2 bytes are kept and joined by the line
//
//	"\n[... output limited to <limit> bytes; <n> interior bytes omitted ...]\n"
//
// where n counts every byte of out not kept. Cuts never split a UTF-8
// sequence: the head backs off and the tail moves forward to a rune start
// (by at most utf8.UTFMax-1 bytes, so invalid UTF-8 cannot make it drift).
// The result is therefore at most limit bytes plus the marker. limit <= 0
// means no limit, and out is returned unchanged when it fits.
func Truncate(out string, limit int) string {
	if limit <= 0 || len(out) <= limit {
		return out
	}
	half := limit / 2

	headEnd := half
	for back := 0; headEnd > 0 && back < utf8.UTFMax-1 && !utf8.RuneStart(out[headEnd]); back++ {
		headEnd--
	}
	if !utf8.RuneStart(out[headEnd]) {
		headEnd = half // not valid UTF-8 here anyway; cut at the byte limit
	}

	tailStart := len(out) - half
	for fwd := 0; tailStart < len(out) && fwd < utf8.UTFMax-1 && !utf8.RuneStart(out[tailStart]); fwd++ {
		tailStart++
	}
	if tailStart < len(out) && !utf8.RuneStart(out[tailStart]) {
		tailStart = len(out) - half
	}

	head, tail := out[:headEnd], out[tailStart:]
	omitted := len(out) - len(head) - len(tail)
	return fmt.Sprintf("%s\n[... output limited to %d bytes; %d interior bytes omitted ...]\n%s", head, limit, omitted, tail)
}

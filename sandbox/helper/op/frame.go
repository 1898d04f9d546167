// Package op is the part of the sandbox helper (cmd/otcurate-sandbox-helper)
// that runs inside a sandbox, and the wire format both sides share: the
// answer frame, the baseline list and the entries of a reset. It uses the
// standard library and golang.org/x/sys only, so the helper stays a small
// static binary; the host side is package sandbox/helper.
package op

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Magic starts every answer frame.
const Magic = "OTCH1"

// Status is the outcome of one helper operation.
type Status string

// Statuses.
const (
	OK         Status = "ok"
	NotFound   Status = "notfound"
	NotRegular Status = "notregular" // the payload names the file's type
	Failed     Status = "error"      // the payload is the message
)

// WriteFrame writes the answer of one call in a single write: a newline,
// then "OTCH1 NONCE STATUS BASE64(payload) NONCE" and a newline. The
// leading newline ends whatever partial line something else left in the
// same stream, so the helper's frame is always a whole last line.
func WriteFrame(w io.Writer, nonce string, st Status, payload []byte) error {
	var b strings.Builder
	b.Grow(len(nonce)*2 + len(st) + base64.StdEncoding.EncodedLen(len(payload)) + 16)
	b.WriteString("\n" + Magic + " " + nonce + " " + string(st) + " ")
	b.WriteString(base64.StdEncoding.EncodeToString(payload))
	b.WriteString(" " + nonce + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrNoFrame is returned by ParseFrame when the output does not end in a
// frame for the nonce.
var ErrNoFrame = errors.New("the helper's output does not end in its answer frame")

// ParseFrame reads the answer of one call from the whole output of the
// command: its last line must be a frame that carries nonce at both ends,
// a known status and valid base64. Anything before that line (text that
// some other process wrote into the same stream) is ignored: the helper
// writes its frame after the kill pass, when no such process is left.
func ParseFrame(out []byte, nonce string) (Status, []byte, error) {
	if nonce == "" {
		return "", nil, errors.New("parse helper frame: empty nonce")
	}
	out = bytes.TrimSuffix(out, []byte("\n"))
	line := out
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		line = out[i+1:]
	}
	f := strings.Split(string(line), " ")
	if len(f) != 5 || f[0] != Magic || f[1] != nonce || f[4] != nonce {
		return "", nil, fmt.Errorf("%w (last line %q)", ErrNoFrame, clip(line))
	}
	st := Status(f[2])
	switch st {
	case OK, NotFound, NotRegular, Failed:
	default:
		return "", nil, fmt.Errorf("%w: unknown status %q", ErrNoFrame, clip([]byte(f[2])))
	}
	payload, err := base64.StdEncoding.Strict().DecodeString(f[3])
	if err != nil {
		return "", nil, fmt.Errorf("%w: payload: %v", ErrNoFrame, err)
	}
	return st, payload, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

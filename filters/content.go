package filters

import (
	"bytes"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/similarity"
)

// ContentObserver is a stage that reads each task's content during the
// intake pass (validate), where the bundle is decoded anyway: near_dup,
// which decides later as a set stage in pool order, and decontam, which
// keeps its verdicts for its own pass. Build hands the observers of a
// stage list to validate. ObserveContent must be safe for concurrent use
// (each call has a Content of its own).
type ContentObserver interface {
	ObserveContent(t *pipeline.Task, c *Content)
}

// Content is a task's decoded bundle as the content observers read it:
// the word hashes of each section are computed once for all of them (the
// instruction's were hashed once by near_dup and again by decontam).
type Content struct {
	Bundle              *bundle.Bundle
	instr, tests        []uint64
	haveInstr, haveTest bool
}

// InstructionWords are instructionWords of the bundle, computed once.
func (c *Content) InstructionWords() []uint64 {
	if !c.haveInstr {
		c.instr, c.haveInstr = instructionWords(c.Bundle), true
	}
	return c.instr
}

// TestWords are testWords of the bundle, computed once.
func (c *Content) TestWords() []uint64 {
	if !c.haveTest {
		c.tests, c.haveTest = testWords(c.Bundle), true
	}
	return c.tests
}

// Text the similarity stages read, per section.
const (
	// maxSectionWords caps the words read per section (instruction or
	// tests): vendored data files in tests/ do not make tasks alike.
	maxSectionWords = 50_000
	// maxTestFile: larger files under tests/ are data, not test code.
	maxTestFile = 256 << 10
)

// instructionWords are the hashes of the normalised words of a task's
// instruction (similarity.WordHashesOf).
func instructionWords(b *bundle.Bundle) []uint64 {
	data, _ := b.Data("instruction.md")
	return capWords(similarity.WordHashesOf(data))
}

// testWords are the hashes of the normalised words of the text files under
// tests/, in name order (binary files, files over maxTestFile and files
// whose content was not retained are left out).
func testWords(b *bundle.Bundle) []uint64 {
	var out []uint64
	for _, name := range b.Names {
		if !strings.HasPrefix(name, "tests/") {
			continue
		}
		data, ok := b.Data(name)
		if !ok || len(data) > maxTestFile || bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 {
			continue
		}
		out = append(out, similarity.WordHashesOf(data)...)
		if len(out) >= maxSectionWords {
			break
		}
	}
	return capWords(out)
}

func capWords(w []uint64) []uint64 {
	if len(w) > maxSectionWords {
		return w[:maxSectionWords]
	}
	return w
}

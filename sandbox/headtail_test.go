package sandbox

import (
	"fmt"
	"strings"
	"testing"
)

func TestHeadTail(t *testing.T) {
	b := NewHeadTail(10)
	for i := 0; i < 100; i++ {
		fmt.Fprintf(b, "%d,", i)
	}
	got := b.String()
	if !strings.HasPrefix(got, "0,1,2") || !strings.HasSuffix(got, "8,99,") || len(got) != 10 || !b.Truncated() {
		t.Errorf("got %q truncated=%v", got, b.Truncated())
	}
	small := NewHeadTail(10)
	small.Write([]byte("abcdefgh"))
	if small.String() != "abcdefgh" || small.Truncated() {
		t.Errorf("small = %q truncated=%v", small.String(), small.Truncated())
	}
	big := NewHeadTail(4)
	big.Write([]byte("0123456789"))
	if big.String() != "0189" {
		t.Errorf("big = %q", big.String())
	}
	tail := NewTail(3)
	tail.Write([]byte("ab"))
	tail.Write([]byte("cd"))
	if tail.String() != "bcd" {
		t.Errorf("tail = %q", tail.String())
	}
}

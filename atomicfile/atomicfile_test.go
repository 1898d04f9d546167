package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	name := filepath.Join(t.TempDir(), "state.json")
	for _, v := range []any{map[string]int{"step": 1}, map[string]int{"step": 2}} {
		if err := WriteJSON(name, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b) != "{\n  \"step\": 2\n}\n" {
		t.Fatalf("%q %v", b, err)
	}
	if _, err := os.Stat(name + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

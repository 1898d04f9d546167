package bundle

import (
	"testing"

	units "github.com/docker/go-units"
)

// TestParseRAMBytesMatchesDocker holds the local parser to go-units'
// RAMInBytes, whose meaning task.toml's legacy size strings inherited.
func TestParseRAMBytesMatchesDocker(t *testing.T) {
	for _, s := range []string{
		"0", "1", "512", "512b", "512B", "2k", "2K", "2kb", "2KiB", "2kib", "3m", "3MB", "3Mi", "3MiB",
		"1g", "1G", "1GB", "1GiB", "1.5g", "1.5 GiB", "2 g", "4t", "1p", "1.25", ".5k", "10.",
		"", " ", "g", "abc", "1x", "1kx", "1kbb", "1kibb", "1bb", "-1", "-1g", "1 2", "1..2k", "1gi",
	} {
		want, wantErr := units.RAMInBytes(s)
		got, err := ParseRAMBytes(s)
		if (err != nil) != (wantErr != nil) || (err == nil && got != want) {
			t.Errorf("ParseRAMBytes(%q) = %d, %v; go-units: %d, %v", s, got, err, want, wantErr)
		}
	}
}

// TestParseRAMBytesRefusesOverflow: go-units wraps these; a size that
// does not fit is an error here.
func TestParseRAMBytesRefusesOverflow(t *testing.T) {
	for _, s := range []string{"8388608p", "1e30", "9223372036854775807", "NaN", "Inf", "1e400"} {
		if v, err := ParseRAMBytes(s); err == nil {
			t.Errorf("ParseRAMBytes(%q) = %d, want an error", s, v)
		}
	}
}

package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/otcurate/otcurate/atomicfile"
)

// WriteSummary writes dir/summary.json (atomically).
func WriteSummary(dir string, s *Summary) error {
	return atomicfile.WriteJSON(filepath.Join(dir, SummaryFile), s)
}

// ReadSummary reads dir/summary.json.
func ReadSummary(dir string) (*Summary, error) {
	name := filepath.Join(dir, SummaryFile)
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

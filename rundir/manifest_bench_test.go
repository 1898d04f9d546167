package rundir

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkWriteManifest writes the manifest of a 20,000-task
// validate+dedup run (what the end of `make bench`'s build writes).
func BenchmarkWriteManifest(b *testing.B) {
	tasks := make([]*Task, 20000)
	for i := range tasks {
		tasks[i] = &Task{Index: int64(i), Path: fmt.Sprintf("task-%05d", i), BlobBytes: 1300, Alive: true,
			Hash: fmt.Sprintf("%064x", i), EnvHash: fmt.Sprintf("%064x", i%3), EnvKind: "dockerfile",
			Marks: []StageMark{{Stage: "validate", Verdict: Keep, Reason: "valid", Seconds: 3.5e-5}, {Stage: "dedup", Verdict: Keep, Reason: "unique"}}}
	}
	name := filepath.Join(b.TempDir(), ManifestFile)
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteManifest(name, tasks, []string{"validate", "dedup"}, testLayout); err != nil {
			b.Fatal(err)
		}
	}
}

package main

import (
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/rundir"
)

// lockRunDir takes dir's lock for the rest of the command (build, filter,
// merge, train, validate --run-dir: the commands that write a run
// directory), failing at once when another process holds it, and sets
// aside a torn last line of its ledger so nothing is appended onto it.
// The caller unlocks when it returns; a killed process releases the lock
// with it.
func lockRunDir(cmd *cobra.Command, logger *slog.Logger, dir string) (*rundir.DirLock, error) {
	l, err := rundir.Lock(dir, cmd.CommandPath()+" --run-dir "+dir)
	if err != nil {
		return nil, err
	}
	torn, bad, err := rundir.RepairJSONL(filepath.Join(dir, rundir.LedgerFile), 10)
	if err != nil {
		l.Unlock()
		return nil, err
	}
	warnRepairs(logger, torn, bad)
	return l, nil
}

// warnRepairs logs what RepairJSONL found.
func warnRepairs(logger *slog.Logger, torn *rundir.TornTail, bad []rundir.BadLine) {
	if torn != nil {
		logger.Warn("torn last line set aside (a write was interrupted); new lines start on a fresh line",
			"file", torn.File, "bytes", torn.Bytes, "saved_as", torn.SavedAs)
	}
	for _, b := range bad {
		logger.Warn("corrupt line in the middle of the file, skipped (left in place)",
			"file", b.File, "line", b.Line, "offset", b.Offset, "bytes", b.Bytes)
	}
}

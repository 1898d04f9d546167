//go:build !unix

package rundir

import "os"

// tryLock: without flock a run directory is not locked (documented in
// Lock's caller's help); every attempt succeeds.
func tryLock(*os.File, bool) (bool, error) { return true, nil }

func unlock(*os.File) error { return nil }

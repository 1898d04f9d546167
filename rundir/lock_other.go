//go:build !unix

package rundir

import "os"

// tryLock: systems without flock do not lock run directories (the README
// says the lock needs flock); every attempt succeeds.
func tryLock(*os.File, bool) (bool, error) { return true, nil }

func unlock(*os.File) error { return nil }

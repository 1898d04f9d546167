//go:build unix

package beneath

// ForceWalk makes d resolve names one component at a time, as it does
// where openat2 is missing.
func ForceWalk(d *Dir) { d.walk = true }

// UsesOpenat2 reports whether d resolves names with openat2.
func UsesOpenat2(d *Dir) bool { return !d.walk }

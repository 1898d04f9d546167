package bundle

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseRAMBytes reads a human-readable memory size the way Docker's
// go-units RAMInBytes does ("512", "512b", "2g", "2G", "2GB", "512Mi",
// "1.5 GiB": case-insensitive, binary multiples, the b suffix optional),
// so task.toml's legacy size strings mean what they meant to Docker.
// Unlike go-units it refuses sizes that do not fit in an int64 (and NaN or
// infinity) instead of wrapping them. It lives here, not as a dependency,
// so the task model does not pull a Docker module into every package.
func ParseRAMBytes(s string) (int64, error) {
	sep := strings.LastIndexAny(s, "0123456789. ")
	if sep == -1 {
		return -1, fmt.Errorf("invalid size: '%s'", s)
	}
	num, sfx := s[:sep+1], s[sep+1:]
	if s[sep] == ' ' {
		num = s[:sep]
	}
	size, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return -1, err
	}
	if size < 0 || math.IsNaN(size) || math.IsInf(size, 0) {
		return -1, fmt.Errorf("invalid size: '%s'", s)
	}
	if sfx != "" {
		mul, err := ramSuffix(sfx)
		if err != nil {
			return -1, err
		}
		size *= mul
	}
	if size >= math.MaxInt64 {
		return -1, fmt.Errorf("size too large: '%s'", s)
	}
	return int64(size), nil
}

// ramSuffix is the multiplier of a size suffix: b, or k/m/g/t/p optionally
// followed by b or ib.
func ramSuffix(sfx string) (float64, error) {
	bad := fmt.Errorf("invalid suffix: '%s'", sfx)
	if len(sfx) > 3 {
		return 0, bad
	}
	sfx = strings.ToLower(sfx)
	if sfx[0] == 'b' {
		if len(sfx) > 1 {
			return 0, bad
		}
		return 1, nil
	}
	i := strings.IndexByte("kmgtp", sfx[0])
	if i < 0 || (len(sfx) == 2 && sfx[1] != 'b') || (len(sfx) == 3 && sfx[1:] != "ib") {
		return 0, bad
	}
	return math.Pow(1024, float64(i+1)), nil
}

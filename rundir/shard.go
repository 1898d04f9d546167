package rundir

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is a deterministic slice of a pool: the tasks whose shard key
// falls in bucket Index of Count. The key is the task's content hash, so
// duplicates land in the same shard (dedup per shard equals dedup of the
// whole pool), a task keeps its shard when the pool grows or is reordered,
// and shards are balanced. Rows that do not decode have no content hash;
// their raw bytes are hashed instead (they are dropped by validate in
// whichever shard they fall).
type Shard struct {
	Index, Count int
}

// ParseShard reads "I/N" (0 ≤ I < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 0 ≤ I < N", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Enabled reports whether the shard restricts the pool.
func (s Shard) Enabled() bool { return s.Count > 1 }

// Has reports whether a task with this content hash (or, when it has
// none, these raw row bytes and path) belongs to the shard.
func (s Shard) Has(contentHash string, path string, blob []byte) bool {
	if !s.Enabled() {
		return true
	}
	return s.bucket(contentHash, path, blob) == s.Index
}

func (s Shard) bucket(contentHash, path string, blob []byte) int {
	var k uint64
	if b, err := hex.DecodeString(contentHash); err == nil && len(b) >= 8 {
		k = binary.BigEndian.Uint64(b)
	} else {
		h := fnv.New64a()
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write(blob)
		k = h.Sum64()
	}
	return int(k % uint64(s.Count))
}

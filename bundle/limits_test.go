package bundle

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

var exponent = regexp.MustCompile(`[0-9][eE][-+]?[0-9]`)

// parseBoth parses doc through the fast decoder (when it takes the
// document: exponents are left to go-toml) and through go-toml and fails
// unless both give the same configuration or the same problem.
func parseBoth(t *testing.T, doc string) (*Config, error) {
	t.Helper()
	var slow map[string]any
	if err := toml.Unmarshal([]byte(doc), &slow); err != nil {
		t.Fatalf("go-toml: %v", err)
	}
	c2, err2 := parseRaw(slow)
	fast, ok := decodeSimpleTOML([]byte(doc))
	if !ok {
		if exponent.MatchString(doc) {
			return c2, err2
		}
		t.Fatalf("the fast decoder did not take %q; the case must exercise both", doc)
	}
	c1, err1 := parseRaw(fast)
	if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
		t.Fatalf("decoders disagree on %q: fast %v, go-toml %v", doc, err1, err2)
	}
	if err1 == nil && (c1.Environment.CPUs != c2.Environment.CPUs || c1.Environment.MemoryMB != c2.Environment.MemoryMB ||
		c1.Environment.StorageMB != c2.Environment.StorageMB || c1.Agent.TimeoutSec != c2.Agent.TimeoutSec) {
		t.Fatalf("decoders disagree on %q: %+v vs %+v", doc, c1.Environment, c2.Environment)
	}
	return c1, err1
}

// TestParseConfigLimits: every resource and timeout is finite and within
// its documented bound, through both decoders; the error names the key and
// the bound.
func TestParseConfigLimits(t *testing.T) {
	cases := []struct {
		name, doc string
		want      string // substring of the problem; "" = valid
	}{
		{"memory 2^44", "[environment]\nmemory_mb = 17592186044416\n", "environment.memory_mb must be positive and at most 1048576"},
		{"memory 1 TiB", "[environment]\nmemory_mb = 1048576\n", ""},
		{"memory zero", "[environment]\nmemory_mb = 0\n", "environment.memory_mb must be positive"},
		{"memory float huge", "[environment]\nmemory_mb = 1.0e30\n", "environment.memory_mb must be positive and at most"},
		{"memory legacy huge", "[environment]\nmemory = \"4096T\"\n", "environment.memory must be at most 1048576 MB"},
		{"memory legacy", "[environment]\nmemory = \"2G\"\n", ""},
		{"storage huge", "[environment]\nstorage_mb = 9223372036854775807\n", "environment.storage_mb must be positive and at most 16777216"},
		{"storage negative", "[environment]\nstorage_mb = -1\n", "environment.storage_mb must be positive"},
		{"storage 512", "[environment]\nstorage_mb = 512\n", ""},
		{"cpus 1000", "[environment]\ncpus = 1000\n", ""},
		{"cpus too many", "[environment]\ncpus = 100000\n", "environment.cpus must be between 0 and 1024, not 100000"},
		{"cpus tiny", "[environment]\ncpus = 0.001\n", ""},
		{"cpus zero", "[environment]\ncpus = 0\n", "environment.cpus must be positive, not 0"},
		{"cpus negative", "[environment]\ncpus = -2\n", "environment.cpus must be between 0 and 1024, not -2"},
		{"gpus fraction", "[environment]\ngpus = 1.5\n", "environment.gpus must be a non-negative integer"},
		{"gpus huge", "[environment]\ngpus = 100000\n", "environment.gpus must be at most 64"},
		{"gpus 2", "[environment]\ngpus = 2\n", ""},
		{"agent timeout 1e12", "[agent]\ntimeout_sec = 1000000000000\n", "agent.timeout_sec must be at most 86400 (24 h)"},
		{"agent timeout 1e12 float", "[agent]\ntimeout_sec = 1.0e12\n", "agent.timeout_sec must be at most 86400"},
		{"agent timeout 24h", "[agent]\ntimeout_sec = 86400\n", ""},
		{"verifier timeout negative", "[verifier]\ntimeout_sec = -5\n", "verifier.timeout_sec must be positive"},
		{"verifier timeout huge", "[verifier]\ntimeout_sec = 9223372036854775807\n", "verifier.timeout_sec must be at most 86400"},
		{"build timeout huge", "[environment]\nbuild_timeout_sec = 100000.5\n", "environment.build_timeout_sec must be at most 86400"},
		{"healthcheck interval huge", "[environment.healthcheck]\ncommand = \"true\"\ninterval_sec = 1.0e300\n", "environment.healthcheck.interval_sec must be at most 86400"},
		{"healthcheck timeout huge", "[environment.healthcheck]\ncommand = \"true\"\ntimeout_sec = 100000\n", "environment.healthcheck.timeout_sec must be at most"},
		{"healthcheck start period huge", "[environment.healthcheck]\ncommand = \"true\"\nstart_period_sec = 100000\n", "environment.healthcheck.start_period_sec must be between 0 and 86400"},
		{"healthcheck start period zero", "[environment.healthcheck]\ncommand = \"true\"\nstart_period_sec = 0\n", ""},
		{"healthcheck start interval huge", "[environment.healthcheck]\ncommand = \"true\"\nstart_interval_sec = 100000\n", "start_interval_sec must be at most"},
		{"healthcheck retries huge", "[environment.healthcheck]\ncommand = \"true\"\nretries = 1.0e30\n", "environment.healthcheck.retries must be between 0 and 10000"},
		{"healthcheck retries fraction", "[environment.healthcheck]\ncommand = \"true\"\nretries = 2.5\n", "environment.healthcheck.retries must be an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseBoth(t, tc.doc)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			d, ok := AsDefect(err)
			if !ok || d.Reason != ReasonInvalidTaskToml || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want invalid_task_toml naming %q", err, tc.want)
			}
		})
	}
}

// TestParseConfigNonFinite: inf and nan are TOML floats the fast decoder
// leaves to go-toml; they are refused either way.
func TestParseConfigNonFinite(t *testing.T) {
	for _, doc := range []string{"[agent]\ntimeout_sec = inf\n", "[environment]\ncpus = nan\n", "[environment]\nmemory_mb = -inf\n"} {
		_, err := ParseConfig([]byte(doc))
		if d, ok := AsDefect(err); !ok || d.Reason != ReasonInvalidTaskToml || !strings.Contains(err.Error(), "must be finite") {
			t.Errorf("%q: got %v, want invalid_task_toml: must be finite", doc, err)
		}
	}
}

// TestParseSizeMBNoOverflow: a byte count near the int64 limit rounds up
// without wrapping negative.
func TestParseSizeMBNoOverflow(t *testing.T) {
	mb, err := parseSizeMB("9223372036854775000")
	if err != nil || mb != 1<<43 {
		t.Fatalf("got %d, %v; want %d", mb, err, int64(1)<<43)
	}
}

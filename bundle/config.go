package bundle

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Config is a parsed task.toml. Parsing is lenient across schema versions
// 1.0–1.4: aliases and deprecated keys are mapped to their current form and
// every default applied is listed in Defaulted (dotted key names).
type Config struct {
	SchemaVersion string
	Task          TaskSection
	Metadata      map[string]any
	Verifier      VerifierSection
	Agent         AgentSection
	Solution      SolutionSection
	Environment   EnvironmentSection
	Steps         int      // number of [[steps]] tables (multi-step tasks)
	StepNames     []string // their name keys, in order ("" where unnamed)
	Defaulted     []string // keys whose value is a default, sorted
	Notes         []string // deprecated keys mapped, unknown values kept
}

// TaskSection is [task].
type TaskSection struct {
	Name, Description, Version string
	Keywords                   []string
}

// VerifierSection is [verifier].
type VerifierSection struct {
	TimeoutSec float64
	User       string
	Env        map[string]string
}

// AgentSection is [agent]. Harbor has no agent limit by default; otcurate
// never runs without one, so it applies 600 s and records it as defaulted.
type AgentSection struct {
	TimeoutSec float64
	User       string
}

// SolutionSection is [solution].
type SolutionSection struct {
	Env map[string]string
}

// EnvironmentSection is [environment].
type EnvironmentSection struct {
	BuildTimeoutSec float64
	DockerImage     string
	OS              string
	CPUs            float64
	MemoryMB        int64
	StorageMB       int64
	GPUs            int64
	NetworkMode     string // public | no-network | allowlist
	AllowedHosts    []string
	Workdir         string
	Env             map[string]string
	Healthcheck     *Healthcheck
}

// Healthcheck is [environment.healthcheck].
type Healthcheck struct {
	Command          string
	IntervalSec      float64
	TimeoutSec       float64
	StartPeriodSec   float64
	StartIntervalSec float64
	Retries          int64
}

// Defaults applied when task.toml leaves a value out (Harbor's documented
// defaults).
const (
	DefaultVerifierTimeoutSec = 600
	DefaultAgentTimeoutSec    = 600
	DefaultBuildTimeoutSec    = 600
	DefaultCPUs               = 1
	DefaultMemoryMB           = 2048
	DefaultStorageMB          = 10240
)

// Bounds of the task.toml numbers. A value outside them is an
// invalid_task_toml defect naming the key and the bound, so every later
// conversion (seconds to a time.Duration, megabytes to bytes, CPUs to
// nano-CPUs) is exact and cannot overflow, and no task can ask for "no
// limit" by overflowing one.
const (
	// MaxTimeoutSec bounds every timeout_sec, build_timeout_sec and
	// healthcheck period: 24 hours.
	MaxTimeoutSec = 24 * 60 * 60
	// MaxMemoryMB bounds memory_mb: 1 TiB.
	MaxMemoryMB = 1 << 20
	// MaxStorageMB bounds storage_mb: 16 TiB.
	MaxStorageMB = 16 << 20
	// MaxCPUs bounds cpus (which must be positive). A request the host
	// cannot meet (above its cores, or below what the engine accepts) is
	// the backend's to adjust once (see sandbox.Resources).
	MaxCPUs = 1024
	// MaxGPUs bounds gpus.
	MaxGPUs = 64
	// MaxHealthcheckRetries bounds environment.healthcheck.retries.
	MaxHealthcheckRetries = 10000
)

// configParser accumulates problems instead of stopping at the first, so a
// user fixing a task.toml sees every issue at once.
type configParser struct {
	cfg      *Config
	problems []string
}

func (p *configParser) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *configParser) defaulted(key string) { p.cfg.Defaulted = append(p.cfg.Defaulted, key) }

// ParseConfig parses task.toml content. Any problem is a *Defect with reason
// invalid_task_toml listing every problem found.
func ParseConfig(data []byte) (*Config, error) {
	raw, simple := decodeSimpleTOML(data)
	if !simple {
		if err := toml.Unmarshal(data, &raw); err != nil {
			return nil, &Defect{Reason: ReasonInvalidTaskToml, Detail: "task.toml: " + oneLine(err.Error()), Err: err}
		}
	}
	return parseRaw(raw)
}

// parseRaw reads a decoded task.toml (from either decoder).
func parseRaw(raw map[string]any) (*Config, error) {
	p := &configParser{cfg: &Config{Metadata: map[string]any{}}}
	p.parse(raw)
	if len(p.problems) > 0 {
		return nil, defectf(ReasonInvalidTaskToml, "task.toml: %s", strings.Join(p.problems, "; "))
	}
	sort.Strings(p.cfg.Defaulted)
	return p.cfg, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (p *configParser) parse(raw map[string]any) {
	c := p.cfg
	switch {
	case raw["schema_version"] != nil:
		c.SchemaVersion = p.str(raw, "", "schema_version")
	case raw["version"] != nil:
		c.SchemaVersion = p.str(raw, "", "version")
		c.Notes = append(c.Notes, "version mapped to schema_version")
	default:
		c.SchemaVersion = "1.0"
		p.defaulted("schema_version")
	}

	task := p.table(raw, "task")
	c.Task.Name = p.str(task, "task.", "name")
	c.Task.Description = p.str(task, "task.", "description")
	c.Task.Version = p.str(task, "task.", "version")
	c.Task.Keywords = p.strList(task, "task.", "keywords")

	if md := p.table(raw, "metadata"); md != nil {
		c.Metadata = md
	}

	ver := p.table(raw, "verifier")
	c.Verifier.TimeoutSec = p.duration(ver, "verifier.", "timeout_sec", DefaultVerifierTimeoutSec)
	c.Verifier.User = p.str(ver, "verifier.", "user")
	c.Verifier.Env = p.strMap(ver, "verifier.", "env")

	agent := p.table(raw, "agent")
	c.Agent.TimeoutSec = p.duration(agent, "agent.", "timeout_sec", DefaultAgentTimeoutSec)
	c.Agent.User = p.str(agent, "agent.", "user")

	sol := p.table(raw, "solution")
	c.Solution.Env = p.strMap(sol, "solution.", "env")

	env := p.table(raw, "environment")
	e := &c.Environment
	e.BuildTimeoutSec = p.duration(env, "environment.", "build_timeout_sec", DefaultBuildTimeoutSec)
	e.DockerImage = p.str(env, "environment.", "docker_image")
	e.OS = p.str(env, "environment.", "os")
	if e.OS == "" {
		e.OS = "linux"
		p.defaulted("environment.os")
	} else if e.OS != "linux" && e.OS != "windows" {
		p.problem("environment.os must be linux or windows, not %q", e.OS)
	}
	e.CPUs = p.bounded(env, "environment.", "cpus", DefaultCPUs, 0, MaxCPUs)
	if e.CPUs <= 0 {
		p.problem("environment.cpus must be positive, not %v", e.CPUs)
	}
	e.MemoryMB = p.sizeMB(env, "memory_mb", "memory", DefaultMemoryMB, MaxMemoryMB)
	e.StorageMB = p.sizeMB(env, "storage_mb", "storage", DefaultStorageMB, MaxStorageMB)
	if g, ok := p.num(env, "environment.", "gpus"); ok {
		switch {
		case g < 0 || g != math.Trunc(g):
			p.problem("environment.gpus must be a non-negative integer, not %v", g)
		case g > MaxGPUs:
			p.problem("environment.gpus must be at most %d, not %v", MaxGPUs, g)
		default:
			e.GPUs = int64(g)
		}
	}
	e.NetworkMode = p.str(env, "environment.", "network_mode")
	switch e.NetworkMode {
	case "public", "no-network", "allowlist":
	case "":
		if v, ok := env["allow_internet"]; ok {
			b, isBool := v.(bool)
			if !isBool {
				p.problem("environment.allow_internet must be a boolean")
			}
			e.NetworkMode = map[bool]string{true: "public", false: "no-network"}[b]
			c.Notes = append(c.Notes, "allow_internet mapped to network_mode")
		} else {
			e.NetworkMode = "public"
			p.defaulted("environment.network_mode")
		}
	default:
		p.problem("environment.network_mode must be public, no-network or allowlist, not %q", e.NetworkMode)
	}
	e.AllowedHosts = p.strList(env, "environment.", "allowed_hosts")
	e.Workdir = p.str(env, "environment.", "workdir")
	if e.Workdir != "" && !strings.HasPrefix(e.Workdir, "/") {
		p.problem("environment.workdir must be an absolute path, not %q", e.Workdir)
	}
	e.Env = p.strMap(env, "environment.", "env")
	if hc := p.table(env, "healthcheck"); hc != nil {
		h := &Healthcheck{Command: p.str(hc, "environment.healthcheck.", "command")}
		if h.Command == "" {
			p.problem("environment.healthcheck.command is required")
		}
		h.IntervalSec = p.duration(hc, "environment.healthcheck.", "interval_sec", 5)
		h.TimeoutSec = p.duration(hc, "environment.healthcheck.", "timeout_sec", 30)
		h.StartPeriodSec = p.bounded(hc, "environment.healthcheck.", "start_period_sec", 0, 0, MaxTimeoutSec)
		h.StartIntervalSec = p.duration(hc, "environment.healthcheck.", "start_interval_sec", 5)
		r := p.bounded(hc, "environment.healthcheck.", "retries", 3, 0, MaxHealthcheckRetries)
		if r != math.Trunc(r) {
			p.problem("environment.healthcheck.retries must be an integer, not %v", r)
		}
		h.Retries = int64(r)
		e.Healthcheck = h
	}

	if steps, ok := raw["steps"]; ok {
		list, isList := steps.([]any)
		if !isList {
			p.problem("steps must be an array of tables")
		}
		for _, item := range list {
			t, ok := item.(map[string]any)
			if !ok {
				p.problem("steps must be an array of tables")
				break
			}
			name, _ := t["name"].(string)
			c.StepNames = append(c.StepNames, name)
		}
		c.Steps = len(list)
	}
}

func (p *configParser) table(m map[string]any, key string) map[string]any {
	if m == nil {
		return nil
	}
	v, ok := m[key]
	if !ok {
		return nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		p.problem("%s must be a table, not %T", key, v)
		return nil
	}
	return t
}

func (p *configParser) str(m map[string]any, prefix, key string) string {
	v, ok := m[key]
	if !ok || m == nil {
		return ""
	}
	switch s := v.(type) {
	case string:
		return s
	case int64, float64:
		// Lenient: version = 1.1 written as a number.
		return fmt.Sprint(s)
	}
	p.problem("%s%s must be a string, not %T", prefix, key, v)
	return ""
}

func (p *configParser) num(m map[string]any, prefix, key string) (float64, bool) {
	v, ok := m[key]
	if !ok || m == nil {
		return 0, false
	}
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		p.problem("%s%s must be a number, not %s", prefix, key, describe(v))
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		p.problem("%s%s must be finite", prefix, key)
		return 0, false
	}
	return f, true
}

func describe(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%T", v)
}

// duration reads a period in seconds: positive and at most MaxTimeoutSec.
func (p *configParser) duration(m map[string]any, prefix, key string, def float64) float64 {
	f, ok := p.num(m, prefix, key)
	if !ok {
		if _, present := m[key]; !present {
			p.defaulted(prefix + key)
		}
		return def
	}
	if f <= 0 {
		p.problem("%s%s must be positive, not %v", prefix, key, f)
		return def
	}
	if f > MaxTimeoutSec {
		p.problem("%s%s must be at most %d (24 h), not %v", prefix, key, MaxTimeoutSec, f)
		return def
	}
	return f
}

// bounded reads a number in [lo, hi]; def when absent.
func (p *configParser) bounded(m map[string]any, prefix, key string, def, lo, hi float64) float64 {
	f, ok := p.num(m, prefix, key)
	if !ok {
		if _, present := m[key]; !present {
			p.defaulted(prefix + key)
		}
		return def
	}
	if f < lo || f > hi {
		p.problem("%s%s must be between %v and %v, not %v", prefix, key, lo, hi, f)
		return def
	}
	return f
}

// sizeMB reads key (megabytes, a number; a fraction is rounded up) or its
// deprecated string form legacy ("2G", "512M", "1024"), positive and at
// most maxMB.
func (p *configParser) sizeMB(m map[string]any, key, legacy string, def, maxMB int64) int64 {
	const prefix = "environment."
	if _, ok := m[key]; ok {
		f, ok := p.num(m, prefix, key)
		if !ok {
			return def
		}
		if f <= 0 || f > float64(maxMB) {
			p.problem("%s%s must be positive and at most %d, not %v", prefix, key, maxMB, f)
			return def
		}
		return int64(math.Ceil(f))
	}
	if v, ok := m[legacy]; ok {
		s, isStr := v.(string)
		if !isStr {
			p.problem("%s%s must be a size string like \"2G\"", prefix, legacy)
			return def
		}
		mb, err := parseSizeMB(s)
		if err != nil {
			p.problem("%s%s: %v", prefix, legacy, err)
			return def
		}
		if mb > maxMB {
			p.problem("%s%s must be at most %d MB, not %q", prefix, legacy, maxMB, s)
			return def
		}
		p.cfg.Notes = append(p.cfg.Notes, legacy+" mapped to "+key)
		return mb
	}
	p.defaulted(prefix + key)
	return def
}

// parseSizeMB reads a deprecated size string ("2G", "512Mi", "1024"; a
// bare number is bytes) as megabytes, rounded up.
func parseSizeMB(s string) (int64, error) {
	b, err := ParseRAMBytes(strings.TrimSpace(s))
	if err != nil || b <= 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	mb := b >> 20
	if b&(1<<20-1) != 0 {
		mb++ // rounded up, without the overflow of b + 1<<20 - 1
	}
	return mb, nil
}

func (p *configParser) strList(m map[string]any, prefix, key string) []string {
	v, ok := m[key]
	if !ok || m == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p.problem("%s%s must be a list of strings", prefix, key)
		return nil
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, ok := item.(string)
		if !ok {
			p.problem("%s%s must be a list of strings", prefix, key)
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (p *configParser) strMap(m map[string]any, prefix, key string) map[string]string {
	v, ok := m[key]
	if !ok || m == nil {
		return nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		p.problem("%s%s must be a table of strings", prefix, key)
		return nil
	}
	out := make(map[string]string, len(t))
	for k, item := range t {
		switch s := item.(type) {
		case string:
			out[k] = s
		case int64, float64, bool:
			out[k] = fmt.Sprint(s)
		default:
			p.problem("%s%s.%s must be a string", prefix, key, k)
		}
	}
	return out
}

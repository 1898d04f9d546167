package bundle

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Info is what validation learns about a well-formed task.
type Info struct {
	Config      *Config
	EnvKind     string // "dockerfile", "compose" or "image"
	TestScript  string // member name of the verifier entrypoint
	HasSolution bool
	Notes       []string // non-fatal observations (kept in the decision detail)
}

// Validate checks that a decoded bundle is a usable single-step Harbor task:
// instruction, task.toml, an environment definition and a verifier script.
// A failure is a *Defect naming the first problem found.
func Validate(b *Bundle) (*Info, error) {
	info := &Info{}
	// task.toml is parsed first, once: a multi-step task (task.toml with
	// [[steps]], instructions and tests in steps/<name>/) has no root
	// instruction.md, and the defect should say what it is, not what it
	// lacks. Other task.toml problems keep their place after the
	// instruction's.
	hasToml := b.Has("task.toml", KindFile)
	raw, tomlRetained := b.Data("task.toml")
	var cfg *Config
	var cfgErr error
	if hasToml && tomlRetained {
		cfg, cfgErr = ParseConfig(raw)
		if cfgErr == nil && cfg.Steps > 0 {
			return nil, multiStep(b, cfg)
		}
	}

	instr, ok := b.Data("instruction.md")
	switch {
	case !b.Has("instruction.md", KindFile):
		return nil, defectf(ReasonMissingInstruction, "instruction.md is missing")
	case ok && len(bytes.TrimSpace(stripCanary(instr))) == 0:
		return nil, defectf(ReasonEmptyInstruction, "instruction.md is empty")
	case ok && !utf8.Valid(instr):
		info.Notes = append(info.Notes, "instruction.md is not valid UTF-8")
	}

	switch {
	case !hasToml:
		return nil, defectf(ReasonMissingTaskToml, "task.toml is missing")
	case !tomlRetained:
		return nil, defectf(ReasonInvalidTaskToml, "task.toml is too large to be a task config")
	case cfgErr != nil:
		return nil, cfgErr
	}
	info.Config = cfg

	if !b.HasDir("environment") {
		if cfg.Environment.DockerImage == "" {
			return nil, defectf(ReasonMissingEnvironment, "environment/ is missing")
		}
		info.Notes = append(info.Notes, "no environment/: uses docker_image "+cfg.Environment.DockerImage)
	}
	switch {
	case b.Has("environment/Dockerfile", KindFile):
		info.EnvKind = "dockerfile"
	case b.Has("environment/docker-compose.yaml", KindFile), b.Has("environment/docker-compose.yml", KindFile):
		info.EnvKind = "compose"
	case cfg.Environment.DockerImage != "":
		info.EnvKind = "image"
	default:
		return nil, defectf(ReasonMissingEnvDef, "environment/ has no Dockerfile or docker-compose.yaml and task.toml sets no docker_image")
	}

	info.TestScript = "tests/test.sh"
	if cfg.Environment.OS == "windows" && !b.Has(info.TestScript, KindFile) {
		info.TestScript = "tests/test.bat"
	}
	if !b.Has(info.TestScript, KindFile) {
		return nil, defectf(ReasonMissingTestScript, "%s is missing", info.TestScript)
	}
	info.HasSolution = b.Has("solution/solve.sh", KindFile)
	if !info.HasSolution {
		info.Notes = append(info.Notes, "no solution/solve.sh (the oracle gate will need one)")
	}
	return info, nil
}

// multiStep is the defect of a task.toml with [[steps]]: it names the
// steps (and which of them have a steps/<name>/ folder).
func multiStep(b *Bundle, cfg *Config) *Defect {
	var names []string
	for i, n := range cfg.StepNames {
		switch {
		case n == "":
			n = fmt.Sprintf("#%d (unnamed)", i+1)
		case !b.HasDir("steps/" + n):
			n += " (no steps/" + n + "/)"
		}
		names = append(names, n)
	}
	return defectf(ReasonUnsupportedTaskKind, "multi-step task: task.toml has %d [[steps]] (%s); otcurate does not run multi-step tasks yet",
		cfg.Steps, strings.Join(names, ", "))
}

// stripCanary drops leading canary comment lines, as Harbor does before
// showing the instruction to the agent.
func stripCanary(s []byte) []byte {
	for {
		line, rest, found := bytes.Cut(s, []byte("\n"))
		line = bytes.TrimSpace(line)
		if !bytes.HasPrefix(line, []byte("<!--")) && !bytes.HasPrefix(line, []byte("#")) {
			return s
		}
		if !strings.Contains(strings.ToLower(string(line)), "canary") {
			return s
		}
		if !found {
			return nil
		}
		s = rest
	}
}

package bundle

import (
	"bytes"
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
	instr, ok := b.Data("instruction.md")
	switch {
	case !b.Has("instruction.md", KindFile):
		return nil, defectf(ReasonMissingInstruction, "instruction.md is missing")
	case ok && len(bytes.TrimSpace(stripCanary(instr))) == 0:
		return nil, defectf(ReasonEmptyInstruction, "instruction.md is empty")
	case ok && !utf8.Valid(instr):
		info.Notes = append(info.Notes, "instruction.md is not valid UTF-8")
	}

	if !b.Has("task.toml", KindFile) {
		return nil, defectf(ReasonMissingTaskToml, "task.toml is missing")
	}
	raw, ok := b.Data("task.toml")
	if !ok {
		return nil, defectf(ReasonInvalidTaskToml, "task.toml is too large to be a task config")
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	info.Config = cfg
	if cfg.Steps > 0 {
		return nil, defectf(ReasonUnsupportedTaskKind, "multi-step task (%d [[steps]]) is not supported yet", cfg.Steps)
	}

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

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/backends"
	"github.com/otcurate/otcurate/trial"
)

// verifierSandboxHelp documents --verifier-sandbox (trial.VerifierSandbox
// has the guarantees of each mode).
const verifierSandboxHelp = "where test.sh runs: fresh (default: a fresh sandbox from the task image receiving every change of the agent's " +
	"except those to the verifier's trust base: the image's interpreters, test runners, libraries, loader and configuration, whatever shadows them, startup hooks, links into the verifier's paths; " +
	"Docker with the engine on this host and the fake backend), separate (the same, carrying only the agent's work roots) " +
	"or shared (in the agent's own sandbox: weaker, tools the agent replaced decide the reward; warns); see otcurate help sandbox"

// runnerFlags are the trial runner's flags every command that runs
// trials has.
type runnerFlags struct {
	verifier    string  // --verifier-sandbox MODE
	maxAgentSec float64 // --max-agent-sec
}

// DefaultMaxAgentSec is --max-agent-sec's default: the oracle's solve.sh
// is a script, and 10 minutes is far more than any needs; a task asking
// for more is capped.
const DefaultMaxAgentSec = 600

// addVerifierSandboxFlag registers --verifier-sandbox MODE and
// --max-agent-sec.
func addVerifierSandboxFlag(f *pflag.FlagSet, rf *runnerFlags) {
	f.StringVar(&rf.verifier, "verifier-sandbox", string(trial.VerifierFresh), verifierSandboxHelp)
	f.Float64Var(&rf.maxAgentSec, "max-agent-sec", DefaultMaxAgentSec,
		"cap on the oracle's time (solve.sh) whatever task.toml's [agent] timeout_sec says; past it the run is solve_timeout (0: the task's own)")
}

// newRunner is a command's trial runner on backend with the
// --verifier-sandbox mode: an unknown mode, or separate on a backend whose
// sandboxes cannot collect the agent's work, is a usage error at startup.
func newRunner(g *globals, backend sandbox.Backend, rf runnerFlags) (*trial.Runner, error) {
	m, err := trial.ParseVerifierSandbox(rf.verifier)
	if err != nil {
		return nil, usageErr(err)
	}
	switch m {
	case trial.VerifierSeparate:
		if err := sandbox.CheckWork(backend); err != nil {
			return nil, usageErr(fmt.Errorf("--verifier-sandbox separate: %w", err))
		}
	case trial.VerifierFresh:
		if err := sandbox.CheckWork(backend); err != nil {
			return nil, usageErr(fmt.Errorf("%w (%v)", sandbox.ErrFreshUnsupported, err))
		}
	case trial.VerifierShared:
		g.logger.Warn(trial.SharedWarning)
	}
	if rf.maxAgentSec < 0 {
		return nil, usageErr(fmt.Errorf("--max-agent-sec %g: want 0 (the task's own) or more", rf.maxAgentSec))
	}
	return &trial.Runner{Backend: backend, Logger: g.logger, VerifierSandbox: m,
		MaxAgentTime: time.Duration(rf.maxAgentSec * float64(time.Second))}, nil
}

// sandboxFlagHelp documents --sandbox; the details are in `otcurate help
// sandbox` (backends.Help).
const sandboxFlagHelp = "where sandboxes run: docker (default: DOCKER_HOST or the local socket), unix://, tcp://, ssh://, docker://ENDPOINT, a fleet HOST[=CAPACITY],..., kube or daytona; see otcurate help sandbox"

// addSandboxFlag registers --sandbox SPEC and its deprecated alias
// --docker-host on the same variable.
func addSandboxFlag(f *pflag.FlagSet, spec *string) {
	f.StringVar(spec, "sandbox", "", sandboxFlagHelp)
	f.StringVar(spec, "docker-host", "", sandboxFlagHelp)
	_ = f.MarkDeprecated("docker-host", "use --sandbox (same values; see otcurate help sandbox)")
}

// newSandboxCmd is `otcurate sandbox`: its help is the sandbox backends'
// documentation (`otcurate help sandbox`), its subcommand the janitor.
func newSandboxCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", GroupID: "curate", Short: "Sandbox backends (--sandbox SPEC) and their janitor", Long: backends.Help}
	var images, all bool
	var spec string
	gc := &cobra.Command{
		Use:   "gc",
		Short: "Remove containers and networks (and with --images, images) left by otcurate runs",
		Long: `gc removes, by label, what otcurate runs left behind: by default only what belongs
to processes that are gone (a killed run), so a run in progress is safe; --all removes
everything otcurate created on this engine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			backend, err := newBackend(cmd, g, spec, newRunID())
			if err != nil {
				return err
			}
			defer backend.Close()
			rep, err := backend.GC(cmd.Context(), sandbox.GCOptions{Images: images, OrphansOnly: !all})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %d containers, %d networks, %d images\n", len(rep.Containers), len(rep.Networks), len(rep.Images))
			return nil
		},
	}
	gc.Flags().BoolVar(&images, "images", false, "also remove environment images built by otcurate")
	gc.Flags().BoolVar(&all, "all", false, "also remove what live otcurate processes own")
	addSandboxFlag(gc.Flags(), &spec)
	cmd.AddCommand(gc)
	return cmd
}

// newKubeHelpCmd keeps `otcurate help kube` (the Kubernetes settings'
// former topic) working: it shows the one sandbox topic.
func newKubeHelpCmd() *cobra.Command {
	return &cobra.Command{Use: "kube", Hidden: true, Short: "The sandbox backends (moved to otcurate help sandbox)", Long: backends.Help}
}

// newBackend opens the backend --sandbox names; a mistake in the spec or
// in the backend's settings is a usage error.
func newBackend(cmd *cobra.Command, g *globals, spec, runID string) (sandbox.Backend, error) {
	b, err := backends.Open(cmd.Context(), spec, backends.Settings{RunID: runID, Logger: g.logger})
	var se *backends.SpecError
	if errors.As(err, &se) {
		return nil, usageErr(err)
	}
	return b, err
}

// openSandbox opens the backend for a run and first removes what killed
// earlier runs left behind.
func openSandbox(cmd *cobra.Command, g *globals, spec, runID string) (sandbox.Backend, error) {
	backend, err := newBackend(cmd, g, spec, runID)
	if err != nil {
		return nil, err
	}
	rep, err := backend.GC(cmd.Context(), sandbox.GCOptions{OrphansOnly: true, ExceptRun: runID})
	switch {
	case err != nil:
		g.logger.Warn("janitor could not clean up earlier runs", "err", err)
	case len(rep.Containers)+len(rep.Networks) > 0:
		g.logger.Info("janitor removed leftovers of earlier runs", "containers", len(rep.Containers), "networks", len(rep.Networks))
	}
	return backend, nil
}

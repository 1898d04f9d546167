package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/otcurate/otcurate/bundle"
)

// globals are the persistent flags shared by every command.
type globals struct {
	logLevel   string
	logFormat  string
	noProgress bool
	workers    int
	maxBytes   int64
	maxMembers int
	maxFile    int64

	cpuProfile string
	traceFile  string
	memProfile string
	memLimit   string
	// memLimitDefault is the soft heap limit applyGCSettings set from the
	// flag's default value; 0 when the user chose one (--memory-limit,
	// GOMEMLIMIT) or none ("off"). See fitMemoryLimit.
	memLimitDefault int64

	logger *slog.Logger
}

func (g *globals) limits() bundle.Limits {
	return bundle.Limits{MaxTotalBytes: g.maxBytes, MaxMembers: g.maxMembers, MaxFileBytes: g.maxFile}
}

// interactive reports whether progress bars may be drawn.
func (g *globals) interactive() bool {
	return !g.noProgress && term.IsTerminal(int(os.Stderr.Fd()))
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	def := bundle.DefaultLimits()
	root := &cobra.Command{
		Use:   "otcurate",
		Short: "Curate RL task pools you can trust",
		Long: `otcurate turns a pool of executable Harbor tasks into a training set whose rewards can
be trusted: every task validated, deduplicated, filtered and selected, every drop explained.

Exit codes: 0 ok; 1 fatal error; 2 usage error; 3 finished, but some tasks or rows
could not be handled (see the output); 130 interrupted (Ctrl-C).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Name() == cobra.ShellCompRequestCmd {
				return nil
			}
			if err := g.setupLogging(cmd.ErrOrStderr()); err != nil {
				return err
			}
			if err := g.applyGCSettings(cmd.Flags().Changed("memory-limit")); err != nil {
				return err
			}
			return g.startProfile()
		},
		PersistentPostRun: func(cmd *cobra.Command, args []string) { g.stopProfile() },
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVar(&g.noProgress, "no-progress", false, "never draw progress bars (they are drawn only on a terminal)")
	pf.IntVar(&g.workers, "workers", runtime.GOMAXPROCS(0), "tasks decoded concurrently")
	pf.Int64Var(&g.maxBytes, "max-bundle-bytes", def.MaxTotalBytes, "limit on a bundle's inflated size (gzip bomb guard)")
	pf.IntVar(&g.maxMembers, "max-members", def.MaxMembers, "limit on a bundle's member count")
	pf.Int64Var(&g.maxFile, "max-file-bytes", def.MaxFileBytes, "limit on one file inside a bundle")
	pf.StringVar(&g.memLimit, "memory-limit", "128MiB", "soft heap limit for the Go runtime (GOMEMLIMIT syntax; \"off\" disables; the GOMEMLIMIT variable wins)")
	pf.StringVar(&g.cpuProfile, "cpuprofile", "", "write a CPU profile (for performance work)")
	_ = pf.MarkHidden("cpuprofile")
	pf.StringVar(&g.memProfile, "memprofile", "", "write an allocation profile at exit (for performance work)")
	_ = pf.MarkHidden("memprofile")
	pf.StringVar(&g.traceFile, "trace", "", "write a runtime execution trace (for performance work; view with go tool trace)")
	_ = pf.MarkHidden("trace")
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddGroup(&cobra.Group{ID: "curate", Title: "Curation:"}, &cobra.Group{ID: "data", Title: "Datasets:"})
	root.AddCommand(
		newBuildCmd(g),
		newFilterCmd(g),
		newValidateCmd(g),
		newPackCmd(g),
		newUnpackCmd(g),
		newInspectCmd(g),
		newGenPoolCmd(g),
		newRunCmd(g),
		newTracesCmd(g),
		newTrainCmd(g),
		newReportCmd(g),
		newMergeCmd(g),
		newSandboxCmd(g),
		newKubeHelpCmd(),
	)
	return root
}

func (g *globals) setupLogging(w io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return usageErr(fmt.Errorf("--log-level: %w", err))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		g.logger = slog.New(slog.NewTextHandler(w, opts))
	case "json":
		g.logger = slog.New(slog.NewJSONHandler(w, opts))
	default:
		return usageErr(fmt.Errorf("--log-format must be text or json, not %q", g.logFormat))
	}
	if g.workers < 1 {
		return usageErr(fmt.Errorf("--workers must be at least 1"))
	}
	return nil
}

func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

func (g *globals) startProfile() error {
	if g.traceFile != "" {
		f, err := os.Create(g.traceFile)
		if err != nil {
			return err
		}
		if err := trace.Start(f); err != nil {
			return err
		}
	}
	if g.cpuProfile == "" {
		return nil
	}
	f, err := os.Create(g.cpuProfile)
	if err != nil {
		return err
	}
	return pprof.StartCPUProfile(f)
}

func (g *globals) stopProfile() {
	if g.memProfile != "" {
		if f, err := os.Create(g.memProfile); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if g.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if g.traceFile != "" {
		trace.Stop()
	}
}

// gcPercent is the GC target otcurate runs with unless GOGC is set. A
// streaming run's live heap is small (15 MB on a 5K validate+dedup, up to
// 60 MB at 20K with lint), so Go's default of 100 collected every few MB
// of allocation: 200 cut the CPU of a 5K validate+dedup by 8% for 18 MB
// more peak RSS at 20K, and the soft memory limit below still caps the
// heap.
const gcPercent = 200

// applyGCSettings sets the GC target (gcPercent) and a soft heap limit so
// peak RSS stays bounded with large blobs (the GC works harder near the
// limit instead of letting the heap double). GOGC and GOMEMLIMIT in the
// environment take precedence.
func (g *globals) applyGCSettings(limitGiven bool) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" || g.memLimit == "off" {
		return nil
	}
	n, err := parseBytes(g.memLimit)
	if err != nil {
		return usageErr(fmt.Errorf("--memory-limit: %w", err))
	}
	debug.SetMemoryLimit(n)
	if !limitGiven {
		g.memLimitDefault = n
	}
	return nil
}

// perTaskHeap is the room fitMemoryLimit adds to the default soft heap
// limit per task of the pool. A run holds some state per task whatever
// its blobs' sizes (the task, its stage marks, near_dup's sketch): about
// 1.25 KB a task with near_dup and decontam, 0.8 KB without, measured at
// 100K padded tasks; the default limit already covers the first 100K or
// so of those bytes, and the blobs in flight.
const perTaskHeap = 512

// fitMemoryLimit raises the default soft heap limit by perTaskHeap per
// task of the pool, so that the limit keeps bounding the blobs in flight
// (its purpose) and not the per-task state a run must hold. At 100K tasks
// with near_dup and decontam that state reached the 128 MiB default and
// the GC ran without pause (1,638 collections, 37% of the CPU) for no
// lower peak RSS: 57 s and 250 MB at 128 MiB, 35 s and 249 MB at 160 MiB.
// A limit the user chose is left as it is.
func (g *globals) fitMemoryLimit(tasks int64) {
	if g.memLimitDefault == 0 || tasks <= 0 {
		return
	}
	n := g.memLimitDefault + tasks*perTaskHeap
	debug.SetMemoryLimit(n)
	g.logger.Debug("soft heap limit fitted to the pool", "tasks", tasks, "limit_mib", n>>20)
}

func parseBytes(s string) (int64, error) {
	n, err := bundle.ParseRAMBytes(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q (use e.g. 128MiB or 1GiB)", s)
	}
	return n, nil
}

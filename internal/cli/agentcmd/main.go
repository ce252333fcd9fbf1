package agentcmd

import (
	"io"
	"os"
	"runtime/debug"

	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

// Memory defaults of the vitals-agent process, unless GOGC or GOMEMLIMIT say otherwise: the agent runs
// on every node, so a MiB saved is saved on each of them (docs/benchmarks.md, "Node agent memory").
// The heap of an idle agent is a few MiB; collecting at 50% growth instead of 100% keeps it there, and
// the soft limit makes the collector work harder before the heap passes it. The CPU this costs is a
// fraction of a percent: the agent allocates little.
const (
	defaultGCPercent   = 50
	defaultMemoryLimit = 16 << 20
)

// Main runs `vitals-agent` with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	root := NewCommand("vitals-agent")
	root.SetOut(stdout)
	root.SetErr(stderr)
	return clirun.Run(root, args, stderr)
}

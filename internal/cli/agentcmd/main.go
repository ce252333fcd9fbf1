package agentcmd

import (
	"io"

	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

// Main runs `vitals-agent` with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := NewCommand("vitals-agent")
	root.AddCommand(clirun.NewVersionCommand("vitals-agent"))
	root.SetOut(stdout)
	root.SetErr(stderr)
	return clirun.Run(root, args, stderr)
}

package cli

import (
	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/internal/cli/agentcmd"
)

// newAgentCommand is `vitals agent`, the same command as the `vitals-agent` binary (which the chart
// runs: it links the agent alone and uses less memory).
func newAgentCommand() *cobra.Command {
	return agentcmd.NewCommand("agent")
}

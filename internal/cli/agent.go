package cli

import (
	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/agent"
)

// newAgentCommand is `vitals agent`; the command itself is built by package agent.
func newAgentCommand() *cobra.Command {
	return agent.NewCommand(Version)
}

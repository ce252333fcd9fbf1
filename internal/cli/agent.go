package cli

import "github.com/spf13/cobra"

// STUB: replaced by the work that builds `vitals agent`.
func newAgentCommand() *cobra.Command {
	return &cobra.Command{Use: "agent", Short: "(not yet built)", Hidden: true}
}

package cli

import "github.com/spf13/cobra"

// STUB: replaced by the work that builds `vitals operator`.
func newOperatorCommand() *cobra.Command {
	return &cobra.Command{Use: "operator", Short: "(not yet built)", Hidden: true}
}

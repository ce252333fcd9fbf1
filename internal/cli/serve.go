package cli

import "github.com/spf13/cobra"

// STUB: replaced by the work that builds `vitals serve`.
func newServeCommand() *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "(not yet built)", Hidden: true}
}

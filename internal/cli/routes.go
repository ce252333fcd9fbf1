package cli

import "github.com/spf13/cobra"

// STUB: replaced by the work that builds `vitals routes`.
func newRoutesCommand() *cobra.Command {
	return &cobra.Command{Use: "routes", Short: "(not yet built)", Hidden: true}
}

package cli

import "github.com/spf13/cobra"

// STUB: replaced by the work that builds `vitals cloudsim`.
func newCloudsimCommand() *cobra.Command {
	return &cobra.Command{Use: "cloudsim", Short: "(not yet built)", Hidden: true}
}

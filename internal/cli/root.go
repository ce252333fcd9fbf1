package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

// Exit codes.
const (
	ExitOK     = clirun.ExitOK
	ExitError  = clirun.ExitError
	ExitConfig = clirun.ExitConfig
)

// Main runs the vitals command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return clirun.Run(NewRootCommand(stdout, stderr), args, stderr)
}

// NewRootCommand builds the command tree.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "vitals",
		Short:         "Health and self-healing for Kubernetes clusters on OpenStack",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		clirun.NewVersionCommand("vitals"),
		newServeCommand(),
		newOperatorCommand(),
		newAgentCommand(),
		newRoutesCommand(),
		newDeorbitCommand(),
		newDoctorCommand(),
	)
	return root
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/config"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitError  = 1
	ExitConfig = 2 // bad configuration or flags
)

// Main runs the vitals command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root := NewRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "vitals: %v\n", err)
	var cerr *config.Error
	var uerr usageError
	if errors.As(err, &cerr) || errors.As(err, &uerr) {
		return ExitConfig
	}
	return ExitError
}

// usageError marks bad flags or arguments (exit code 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

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
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newVersionCommand(),
		newServeCommand(),
		newOperatorCommand(),
		newAgentCommand(),
		newCloudsimCommand(),
		newRoutesCommand(),
	)
	return root
}

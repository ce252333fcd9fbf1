package agentcmd

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

// Exit codes, as `vitals`'.
const (
	exitOK     = 0
	exitError  = 1
	exitConfig = 2 // bad configuration or flags
)

// Main runs `vitals-agent` with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root := NewCommand("vitals-agent")
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "vitals-agent: %v\n", err)
	var cerr *config.Error
	var ferr flagError
	if errors.As(err, &cerr) || errors.As(err, &ferr) {
		return exitConfig
	}
	return exitError
}

// flagError marks bad flags or arguments (exit code 2).
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

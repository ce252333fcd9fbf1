// Package clirun runs a root cobra command as a process: SIGINT and SIGTERM cancel its context, errors
// are printed once, and the exit code says what went wrong. Every binary's main uses it (vitals through
// internal/cli, vitals-agent through internal/cli/agentcmd), so they agree on exit codes.
package clirun

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

// ExitCoder is an error that chooses its exit code (a command's usage error answers ExitConfig).
type ExitCoder interface {
	error
	ExitCode() int
}

// flagError marks bad flags or arguments.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }
func (flagError) ExitCode() int   { return ExitConfig }

// Run executes root with args until it returns or a signal cancels it, prints its error to stderr
// prefixed with root's name, and returns the exit code: ExitConfig for *config.Error and flag errors,
// the code of an ExitCoder, ExitError for other errors.
func Run(root *cobra.Command, args []string, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root.SilenceUsage, root.SilenceErrors = true, true
	SetVersion(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	var cerr *config.Error
	if errors.As(err, &cerr) {
		return ExitConfig
	}
	var coder ExitCoder
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return ExitError
}

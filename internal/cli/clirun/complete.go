package clirun

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Shell completion of flag values. Every flag whose value is one of a fixed set completes that set
// (CompleteValues), and every flag naming a file or directory completes file names (CompleteFiles,
// CompleteDirs): `vitals completion bash|zsh|fish|powershell` writes the script that asks the
// command (its hidden __complete command) for them. A flag a command does not define is a
// programming error: these helpers panic, and every command is built by the tests.

// CompleteValues makes flag name of cmd complete values (and no file names).
func CompleteValues(cmd *cobra.Command, name string, values ...string) {
	Must(cmd, name, cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)))
}

// CompleteFiles makes flag name of cmd complete file names ending in one of extensions (without
// the dot; none: any file).
func CompleteFiles(cmd *cobra.Command, name string, extensions ...string) {
	Must(cmd, name, cmd.MarkFlagFilename(name, extensions...))
}

// CompleteDirs makes flag name of cmd complete directory names.
func CompleteDirs(cmd *cobra.Command, name string) {
	Must(cmd, name, cmd.MarkFlagDirname(name))
}

// Must panics when err, the result of registering the completion of flag name of cmd, is an error.
func Must(cmd *cobra.Command, name string, err error) {
	if err != nil {
		panic(fmt.Sprintf("command %s: completion of --%s: %v", cmd.CommandPath(), name, err))
	}
}

package clirun

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/internal/base/version"
)

// NewVersionCommand is the `version` command of every binary: version, commit, Go and the client
// libraries' versions, as text (default), json or yaml.
func NewVersionCommand(binary string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and the Kubernetes and OpenStack client library versions",
		Example: "  " + binary + " version\n" +
			"  " + binary + " version -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return WriteVersion(cmd.OutOrStdout(), binary, version.Get(), output)
		},
	}
	AddOutputFlag(cmd, &output)
	return cmd
}

// WriteVersion writes in to w in the format output (text, json or yaml); another format is a flag error.
func WriteVersion(w io.Writer, binary string, in version.Info, output string) error {
	return WriteOutput(w, output, in, func() error {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", binary, in.Version)
		line := func(k, v string) {
			if v != "" {
				fmt.Fprintf(&b, "  %-12s %s\n", k+":", v)
			}
		}
		commit := in.Commit
		if commit != "" && in.Modified {
			commit += " (modified)"
		}
		line("commit", commit)
		line("commit time", in.CommitTime)
		line("go", in.GoVersion)
		line("platform", in.Platform)
		if in.Kubernetes != "" {
			line("kubernetes", "client-go "+in.Kubernetes)
		}
		line("gophercloud", in.Gophercloud)
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// SetVersion gives root a --version flag (cobra's): "<binary> <version> (commit <commit>, <go version>)",
// the first lines of the version command in one line, exit 0.
func SetVersion(root *cobra.Command) {
	if root.Version != "" {
		return
	}
	root.Version = version.Get().Line()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
}

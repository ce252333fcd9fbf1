package clirun

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/internal/version"
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
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// WriteVersion writes in to w in the format output (text, json or yaml); another format is a flag error.
func WriteVersion(w io.Writer, binary string, in version.Info, output string) error {
	switch output {
	case "json":
		b, err := json.MarshalIndent(in, "", "  ")
		if err != nil {
			return fmt.Errorf("encode version: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode version: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "", "text":
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
	}
	return flagError{fmt.Errorf("--output %q: expected text, json or yaml", output)}
}

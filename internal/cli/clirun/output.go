package clirun

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats of the commands that print a table or a report: text (for people), json and yaml
// (for scripts: the same data, with stable field names).
var outputFormats = []string{"text", "json", "yaml"}

// AddOutputFlag adds -o/--output (text, json or yaml; default text) to cmd, bound to p, with completion
// of its values.
func AddOutputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "text", "output format: text, json or yaml")
	CompleteValues(cmd, "output", outputFormats...)
}

// CheckOutput refuses an output format other than text, json or yaml (a flag error: exit code 2).
// Commands call it before doing any work.
func CheckOutput(output string) error {
	switch output {
	case "", "text", "json", "yaml":
		return nil
	}
	return flagError{fmt.Errorf("--output %q: expected text, json or yaml", output)}
}

// WriteOutput writes v to w as json or yaml, or calls text for the text format.
func WriteOutput(w io.Writer, output string, v any, text func() error) error {
	if err := CheckOutput(output); err != nil {
		return err
	}
	switch output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %T as JSON: %w", v, err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %T as YAML: %w", v, err)
		}
		_, err = w.Write(b)
		return err
	}
	return text()
}

package clirun_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/internal/base/version"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

func TestWriteVersion(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/vitalsproject/vitals", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "k8s.io/client-go", Version: "v0.37.1"},
			{Path: "github.com/gophercloud/gophercloud/v2", Version: "v2.15.0", Replace: &debug.Module{Path: "example.org/fork", Version: "v2.15.1"}},
		},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-23T12:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		},
	}
	full := version.FromBuildInfo("v1.2.3", bi)
	agent := version.FromBuildInfo("dev", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.9.0"}})
	for _, tc := range []struct {
		name    string
		in      version.Info
		output  string
		want    []string // lines or fields the output holds
		notWant []string
		decode  func([]byte, any) error
		wantErr string
	}{
		{name: "text", in: full, output: "", want: []string{
			"vitals v1.2.3\n", "  commit:      0123abcd (modified)\n", "  go:          go1.26.0\n",
			"  kubernetes:  client-go v0.37.1\n", "  gophercloud: v2.15.1\n"}},
		{name: "text explicit", in: full, output: "text", want: []string{"vitals v1.2.3\n"}},
		{name: "text without libraries", in: agent, output: "text", want: []string{"vitals v0.9.0\n"}, notWant: []string{"gophercloud", "commit"}},
		{name: "json", in: full, output: "json", decode: json.Unmarshal},
		{name: "yaml", in: full, output: "yaml", decode: func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }},
		{name: "json without libraries", in: agent, output: "json", decode: json.Unmarshal, notWant: []string{"gophercloud", "commit"}},
		{name: "unknown format", in: full, output: "xml", wantErr: `--output "xml": expected text, json or yaml`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := clirun.WriteVersion(&out, "vitals", tc.in, tc.output)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				var ec clirun.ExitCoder
				if !errors.As(err, &ec) || ec.ExitCode() != clirun.ExitConfig {
					t.Errorf("error %v does not exit %d", err, clirun.ExitConfig)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := out.String()
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("output lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(s, w) {
					t.Errorf("output holds %q:\n%s", w, s)
				}
			}
			if tc.decode != nil {
				var got version.Info
				if err := tc.decode(out.Bytes(), &got); err != nil {
					t.Fatalf("decode %s: %v\n%s", tc.output, err, s)
				}
				if got != tc.in {
					t.Errorf("decoded %+v, want %+v", got, tc.in)
				}
			}
		})
	}
}

// TestVersionCommand runs the command as a binary's root would, with its flag.
func TestVersionCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, clirun.ExitOK, "vitals-agent "},
		{[]string{"version", "-o", "json"}, clirun.ExitOK, `"goVersion": "go`},
		{[]string{"version", "--output=yaml"}, clirun.ExitOK, "goVersion: go"},
		{[]string{"version", "-o", "table"}, clirun.ExitConfig, ""},
		{[]string{"version", "extra"}, clirun.ExitError, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := &cobra.Command{Use: "vitals-agent"}
			root.AddCommand(clirun.NewVersionCommand("vitals-agent"))
			var stdout, stderr bytes.Buffer
			root.SetOut(&stdout)
			code := clirun.Run(root, tc.args, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.want) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tc.want)
			}
		})
	}
}

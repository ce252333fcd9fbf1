package agentcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

func TestMainExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--bogus"}, clirun.ExitConfig, "unknown flag: --bogus"},
		{"bad mode", []string{"--node-name", "n", "--cni-failure-mode", "sometimes"}, clirun.ExitConfig, "cni-failure-mode: expected"},
		{"report without result", []string{"report", "--socket", "/nonexistent/s.sock"}, clirun.ExitConfig, "result: missing"},
		{"report nobody listens", []string{"report", "--socket", "/nonexistent/s.sock", "--result", "success"}, clirun.ExitError, "connect to agent socket"},
		{"help", []string{"--help"}, clirun.ExitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}

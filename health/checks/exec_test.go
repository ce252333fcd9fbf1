package checks

import (
	"strings"
	"testing"
	"time"
)

func TestExecRealCommands(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    ExecOptions
		wantErr string
		detail  string
	}{
		{"exit 0", ExecOptions{Command: []string{"true"}}, "", "true exit 0"},
		{"exit 1 with output on one line", ExecOptions{Command: []string{"sh", "-c", "echo db down; echo >&2 retry later; exit 1"}},
			"sh: exit code 1 (want 0): db down retry later", ""},
		{"expected exit code", ExecOptions{Command: []string{"sh", "-c", "exit 3"}, ExitCode: 3}, "", "sh exit 3"},
		{"not found", ExecOptions{Command: []string{"vitals-no-such-command"}}, "executable file not found", ""},
		{"killed at the timeout", ExecOptions{Command: []string{"sleep", "10"}, Timeout: 100 * time.Millisecond}, "sleep: killed after 100ms", ""},
		{"env replaced", ExecOptions{Command: []string{"sh", "-c", `test "$V" = 1 || { echo "V=$V"; exit 1; }`}, Env: []string{"V=2"}}, "V=2", ""},
		{"dir", ExecOptions{Command: []string{"sh", "-c", `[ "$(pwd)" = / ] || exit 1`}, Dir: "/"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Exec(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			detail, err := run(t, f)
			wantResult(t, err, tc.wantErr)
			if tc.detail != "" && detail != tc.detail {
				t.Errorf("detail %q, want %q", detail, tc.detail)
			}
		})
	}
}

func TestExecOutputKeptTo4KiB(t *testing.T) {
	f, err := Exec(ExecOptions{Command: []string{"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; exit 2"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, f)
	wantResult(t, err, "[output truncated]")
	if msg := err.Error(); !strings.Contains(msg, strings.Repeat("x", MaxOutput)) || strings.Contains(msg, strings.Repeat("x", MaxOutput+1)) {
		t.Errorf("output not kept to %d bytes: %d bytes of message", MaxOutput, len(msg))
	}
	if _, err := Exec(ExecOptions{}); err == nil {
		t.Error("empty command accepted")
	}
}

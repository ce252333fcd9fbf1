package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// TestExecLeavesNoProcess runs real shells that start children and proves that none survives
// the check: at the timeout the whole process group is killed (not only the shell), and a command
// that exits leaving children behind has them killed too.
func TestExecLeavesNoProcess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string // %s is the marker argument of sleep
		timeout time.Duration
		ctx     time.Duration // deadline of the check's context; 0 for none
		wantErr string
	}{
		{"timeout kills the group", "sleep %s & sleep %s", 300 * time.Millisecond, 0, "killed after 300ms"},
		{"a detached child dies at the timeout", "sleep %s >/dev/null 2>&1 </dev/null & sleep %s", 300 * time.Millisecond, 0, "killed after"},
		{"the context's deadline kills the group", "sleep %s & sleep %s", 10 * time.Second, 300 * time.Millisecond, "killed after"},
		{"children left by a command that exits", "sleep %s >/dev/null 2>&1 & sleep %s >/dev/null 2>&1 & exit 0", time.Second, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("%d.%d", 1000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
			f, err := Exec(ExecOptions{Command: []string{"sh", "-c", strings.ReplaceAll(tc.script, "%s", marker)}, Timeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			wantResult(t, f(ctx), tc.wantErr)
			// SIGKILL is delivered asynchronously: wait (bounded) for the processes to go.
			deadline := time.Now().Add(10 * time.Second)
			for {
				left := sleepers(t, marker)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, pid := range left {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					t.Fatalf("processes left running: %v", left)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// sleepers returns the live processes running "sleep MARKER", read from /proc.
func sleepers(t *testing.T, marker string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 { // gone, or a zombie
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 2 && filepath.Base(args[0]) == "sleep" && args[1] == marker {
			pids = append(pids, pid)
		}
	}
	return pids
}

package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxOutput is how much of a command's combined output Exec keeps: 4 KiB, what Docker keeps of a
// health check's output.
const MaxOutput = 4096

// ExecOptions configure Exec.
type ExecOptions struct {
	// Command and its arguments; Command[0] is looked up in PATH.
	Command []string
	// Env, when not nil, replaces the environment ("KEY=value").
	Env []string
	// Dir is the working directory; "" means the caller's.
	Dir string
	// ExitCode that counts as healthy; default 0.
	ExitCode int
	// Timeout of the command; default 10s. The command's whole process group is killed at the
	// timeout (or when the check's context ends).
	Timeout time.Duration
}

// Exec runs a command and checks its exit code. Its combined output, kept to MaxOutput bytes,
// is part of the failure message (squeezed to one line).
//
// The command runs in a process group of its own. At the timeout the whole group is killed, not
// just the command (a shell's children too); when the command exits, whatever it left running in
// its group is killed as well, so that a check run every few seconds never piles up processes.
// A process that leaves the group with setsid or setpgid escapes that kill; in a process that runs
// a Reaper (vitals serve, the healthcheck command) it is reparented there, killed and reaped.
func Exec(opts ExecOptions) (Func, error) {
	if len(opts.Command) == 0 || opts.Command[0] == "" {
		return nil, errors.New("exec check: no command")
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if timeout < 0 {
		return nil, errors.New("exec check: negative timeout")
	}
	name := opts.Command[0]
	return func(ctx context.Context) error {
		ctx2, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx2, name, opts.Command[1:]...)
		cmd.Env, cmd.Dir = opts.Env, opts.Dir
		out := &limitedBuffer{max: MaxOutput}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
		cmd.WaitDelay = time.Second // do not wait for grandchildren holding the pipe
		err := runInGroup(cmd)
		code := 0
		var ee *exec.ExitError
		switch {
		case ctx2.Err() != nil:
			return fmt.Errorf("%s: killed after %s%s", name, timeout, outputSuffix(out))
		case errors.As(err, &ee):
			code = ee.ExitCode()
			if code < 0 {
				return fmt.Errorf("%s: %s%s", name, ee.ProcessState, outputSuffix(out))
			}
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		}
		if code != opts.ExitCode {
			return fmt.Errorf("%s: exit code %d (want %d)%s", name, code, opts.ExitCode, outputSuffix(out))
		}
		observe(ctx, fmt.Sprintf("%s exit %d", name, code))
		return nil
	}, nil
}

// runInGroup starts cmd (the leader of a new process group) and waits for it; once the leader has
// exited, and before it is reaped, the rest of its group is killed. Reaping after the kill keeps
// the group's id from being reused by an unrelated process in between.
func runInGroup(cmd *exec.Cmd) error {
	if err := startTracked(cmd.Start, func() int { return cmd.Process.Pid }); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	defer untrack(pid)
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break // on another error, Wait below reports it
		}
	}
	_ = killGroup(pid)
	return cmd.Wait()
}

// killGroup sends SIGKILL to every process of the group led by pid; a group already gone is fine.
func killGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

func outputSuffix(b *limitedBuffer) string {
	s := strings.TrimSpace(b.buf.String())
	if s == "" {
		return ""
	}
	s = strings.Join(strings.Fields(s), " ")
	if b.dropped {
		s += " [output truncated]"
	}
	return ": " + s
}

// limitedBuffer keeps the first max bytes written and drops the rest (the writer never fails, so
// the command never sees a broken pipe).
type limitedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if room < len(p) {
		b.dropped = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// String returns what was kept.
func (b *limitedBuffer) String() string { return b.buf.String() }

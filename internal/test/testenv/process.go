package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a server started by this package: in its own process group (so that Stop reaches its workers
// too), killed when the test binary dies, with its output appended to a log file.
type process struct {
	name    string
	path    string
	args    []string
	env     []string // added to os.Environ()
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the running process has exited
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("start %s: already running (pid %d)", p.name, p.cmd.Process.Pid)
		}
	}
	lf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: open log: %w", p.name, err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start %s (%s): %w", p.name, p.path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		lf.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// exited reports whether the process was started and has exited since.
func (p *process) exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process (a master that stops its own workers, like uwsgi's), waits up to grace,
// then kills its whole process group.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := cmd.Process.Pid
	select {
	case <-done:
		// the leader is gone; make sure no worker of its group is left
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return nil
	default:
	}
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("stop %s: pid %d survived SIGKILL", p.name, pgid)
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // workers that ignored the TERM
	return nil
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(lines int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// waitReady polls ready every 100ms until it returns nil, the process exits, or timeout passes.
func (p *process) waitReady(timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("%s exited while starting; log %s:\n%s", p.name, p.logPath, p.logTail(20))
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		last = ready(rctx)
		rcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %w; log %s:\n%s", p.name, timeout, last, p.logPath, p.logTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

var errNotReady = errors.New("not ready")

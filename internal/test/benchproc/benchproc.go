// Package benchproc runs the child processes of the benchmarks and of the soak (the operator, the simulator):
// each with its output in a log file of its own, in a process group of its own that the kernel kills with
// the parent, and stopped with SIGTERM, then SIGKILL after a grace period.
package benchproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Process is a child process with its output in a log file.
type Process struct {
	cmd *exec.Cmd
	// LogPath holds its stdout and stderr.
	LogPath string
	done    chan struct{}
	once    sync.Once
}

// Start runs path with args and env (added to the parent's), its output in dir/name.log.
func Start(dir, name, path string, env []string, args ...string) (*Process, error) {
	lp := filepath.Join(dir, name+".log")
	lf, err := os.Create(lp)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{cmd: cmd, LogPath: lp, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// PID of the process.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig (SIGSTOP and SIGCONT freeze and continue it).
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to grace, then kills; it returns once the process has ended. Only the
// first call acts.
func (p *Process) Stop(grace time.Duration) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// FreePorts returns n free TCP ports of 127.0.0.1 (free when asked: another process may take one first).
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

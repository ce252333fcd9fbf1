package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

func buildPause(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pause")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startAsInit starts pause as PID 1 of a new PID namespace, as it runs in a pod sandbox.
func startAsInit(t *testing.T, bin string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "a new PID namespace needs root")
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	time.Sleep(200 * time.Millisecond) // its signal handler
	return cmd
}

// children returns the PIDs whose parent is pid, with their states (Z: a zombie).
func children(t *testing.T, pid int) map[int]string {
	t.Helper()
	out := map[int]string{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		rest := s[strings.LastIndexByte(s, ')')+2:] // "S ppid ..."
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		out[p] = fields[0]
	}
	return out
}

// TestReapsOrphans: processes orphaned in the sandbox's PID namespace become pause's children; when they
// exit, pause reaps them (no zombie stays).
func TestReapsOrphans(t *testing.T) {
	bin := buildPause(t)
	p := startAsInit(t, bin)
	// a shell in pause's namespace starts three short sleeps in the background and exits: they are orphans,
	// reparented to the namespace's init, pause
	sh := exec.Command("nsenter", "-t", strconv.Itoa(p.Process.Pid), "-p", "--", "sh", "-c",
		"exec >/dev/null 2>&1; sleep 1 & sleep 1.2 & sleep 1.5 & exit 0")
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v\n%s", err, out)
	}
	saw := 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		kids := children(t, p.Process.Pid)
		saw = max(saw, len(kids))
		if saw > 0 && len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("children of pause after 10 s: %v (Z: zombies it did not reap; saw %d)", kids, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("pause is gone: %v", err)
	}
}

// TestExitsOnSignals: SIGTERM and SIGINT end it with status 0; other signals it ignores by default do not.
func TestExitsOnSignals(t *testing.T) {
	bin := buildPause(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startAsInit(t, bin)
			if err := p.Process.Signal(syscall.SIGCHLD); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			if err := p.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- p.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("pause after %s: %v, want exit status 0", sig, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("pause still runs 5 s after %s", sig)
			}
		})
	}
}

func TestRefusesArguments(t *testing.T) {
	bin := buildPause(t)
	err := exec.Command(bin, "extra").Run()
	var ee *exec.ExitError
	if !asExit(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("pause extra: %v, want exit status 2", err)
	}
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

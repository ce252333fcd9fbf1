package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// PauseOpenStackService freezes a service of the shared test cloud (SIGSTOP to its process and every
// descendant, as a hung process or a host that stopped scheduling it) until t ends or the returned resume is
// called (SIGCONT): what the service was asked meanwhile waits, as its queue holds it. name is a process of
// hack/openstack.sh (octavia-worker, cinder-volume, ...). Every other test that uses the service waits too: call
// it from a test that does not run in parallel (no t.Parallel: Go starts the parallel tests only after the
// sequential ones ended), and resume it as soon as the test has seen what it needs.
func PauseOpenStackService(t testing.TB, name string) (resume func()) {
	t.Helper()
	RequireFull(t)
	pidFile := filepath.Join(StateDir(), "openstack", "state", name+".pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("pause %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("pause %s: pid file %s holds %q", name, pidFile, b)
	}
	pids := append([]int{pid}, descendants(pid)...)
	signal := func(sig syscall.Signal) error {
		var errs []string
		for _, p := range pids {
			if err := syscall.Kill(p, sig); err != nil && err != syscall.ESRCH {
				errs = append(errs, fmt.Sprintf("%d: %v", p, err))
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("signal %v to %s: %s", sig, name, strings.Join(errs, "; "))
		}
		return nil
	}
	if err := signal(syscall.SIGSTOP); err != nil {
		_ = signal(syscall.SIGCONT)
		t.Fatal(err)
	}
	resumed := false
	resume = func() {
		if resumed {
			return
		}
		resumed = true
		if err := signal(syscall.SIGCONT); err != nil {
			t.Errorf("resume: %v", err)
		}
	}
	t.Cleanup(resume)
	return resume
}

// descendants are the processes below pid (by their parent in /proc), children first.
func descendants(pid int) []int {
	parents := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ")"
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parents[pp] = append(parents[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range parents[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

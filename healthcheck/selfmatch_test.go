package healthcheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runBinary runs the built command and returns its exit code and line.
func runBinary(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), strings.TrimSpace(out.String())
}

// waitFile waits until path exists (a process wrote it once started).
func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// procState is the state letter of /proc/<pid>/stat.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// A process check never counts another healthcheck, the script an exec check of one runs (named
// like the service, as TripleO's /usr/share/openstack-tripleo-common/healthcheck/nova-api is), a
// child of that script that left its process group with setsid, or a zombie; a real process of
// that name does count.
func TestBinaryProcessNeverMatchesCheckersOrZombies(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	name := "vhc-svc-" + strconv.Itoa(os.Getpid())
	script := filepath.Join(dir, name)
	started := filepath.Join(dir, "started")
	// The script (run by sh: argv[1] is a path with the service's base name) starts a child in a
	// session of its own that carries the name too, then waits.
	body := "#!/bin/sh\nsetsid sleep 30 " + name + " &\necho $! >" + started + ".tmp; mv " + started + ".tmp " + started + "\nsleep 30\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	long := exec.Command(bin, "exec", "--timeout", "40s", "/bin/sh", script)
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = long.Process.Kill()
		_ = long.Wait()
		if b, err := os.ReadFile(started); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitFile(t, started)

	for _, args := range [][]string{
		{"process", name},
		{"process", name, "--cmdline"}, // the running healthcheck's own command line names it
	} {
		if code, line := runBinary(t, bin, args...); code != 1 || !strings.Contains(line, "no process matching") {
			t.Errorf("%v with only checkers naming %s: exit %d %q, want 1 and no process matching", args, name, code, line)
		}
	}

	// A zombie of that name does not run.
	zname := "vhc-zmb-" + strconv.Itoa(os.Getpid())
	zlink := filepath.Join(dir, zname)
	if err := os.Symlink("/bin/true", zlink); err != nil {
		t.Fatal(err)
	}
	z := exec.Command(zlink)
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = z.Wait() })
	for i := 0; procState(z.Process.Pid) != 'Z'; i++ {
		if i > 600 {
			t.Fatalf("pid %d never became a zombie", z.Process.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, line := runBinary(t, bin, "process", zname); code != 1 {
		t.Errorf("process %s with only a zombie: exit %d %q, want 1", zname, code, line)
	}

	// The real thing counts.
	slink := filepath.Join(dir, "svc", name)
	if err := os.MkdirAll(filepath.Dir(slink), 0o755); err != nil {
		t.Fatal(err)
	}
	sleepPath, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sleepPath, slink); err != nil {
		t.Fatal(err)
	}
	svc := exec.Command(slink, "30")
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Process.Kill(); _ = svc.Wait() })
	want := "pid " + strconv.Itoa(svc.Process.Pid)
	if code, line := runBinary(t, bin, "process", name); code != 0 || !strings.Contains(line, want) || strings.Contains(line, want+",") {
		t.Errorf("process %s with the service running: exit %d %q, want 0 and %s alone", name, code, line, want)
	}
}

// A file given by mistake as the config (a token) is refused with its line and column, never
// echoed, whatever YAML its first character would start.
func TestBinaryConfigErrorsNeverEchoTheFile(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	for i, tok := range []string{"glpat-SECRETi43", "&SECRETi43", "*SECRETi43", "{SECRETi43}", "!SECRETi43", "|SECRETi43",
		"user:SECRETi43", "SECRETi43: x", "checks: [a] SECRETi43", "checks: [a SECRETi43]"} {
		p := filepath.Join(dir, "token"+strconv.Itoa(i))
		if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, line := runBinary(t, bin, "--config", p)
		if code != 1 || strings.Contains(line, "SECRET") || !strings.Contains(line, p+": line 1") {
			t.Errorf("config %q: exit %d %q, want 1, the line and never the content", tok, code, line)
		}
	}
}

// An exec check whose command leaves a child in a session of its own (setsid) leaves nothing
// running once the healthcheck has exited: the child is killed and reaped there. This test
// process is a subreaper, so that a child the healthcheck left behind comes here and shows.
func TestBinaryExecLeavesNoSetsidChild(t *testing.T) {
	bin := binary(t)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	pidFile := filepath.Join(t.TempDir(), "pid")
	code, line := runBinary(t, bin, "exec", "/bin/sh", "-c", "setsid sleep 303 </dev/null >/dev/null 2>&1 & echo $! >"+pidFile)
	if code != 0 {
		t.Fatalf("exec: exit %d %q", code, line)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if s := procState(pid); s != 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_, _ = syscall.Wait4(pid, nil, 0, nil)
		t.Errorf("pid %d, the setsid child of the exec check, outlived the healthcheck (state %c)", pid, s)
	}
}

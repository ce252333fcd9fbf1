package e2e

// End-to-end scenario of the container healthcheck under a real Docker engine (the private dockerd
// of hack/testenv.sh): a FROM-scratch image holding a small service and our static healthcheck
// binary; the engine's own HEALTHCHECK evaluation must go starting -> healthy -> unhealthy (when
// the service breaks, with our line in the health log) -> healthy (when it is fixed), for an http,
// a listen (port) and a file check. The file check runs through the /openstack/healthcheck symlink
// with its YAML config, as TripleO images would.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// hcDocker runs the docker CLI against the private engine.
func hcDocker(t *testing.T, host string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("docker", append([]string{"-H", host}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func hcMustDocker(t *testing.T, host string, args ...string) string {
	t.Helper()
	out, err := hcDocker(t, host, args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// hcBuildContext builds the two static binaries and the files of the image into a directory.
func hcBuildContext(t *testing.T) string {
	t.Helper()
	root := opRepoRoot()
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{
		{"healthcheck", "./cmd/healthcheck"},
		{"service", "./test/e2e/testdata/healthcheck/service"},
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-tags", "nethttpomithttp2",
			"-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.pkg, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "openstack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/healthcheck", filepath.Join(dir, "openstack", "healthcheck")); err != nil {
		t.Fatal(err)
	}
	cfg := "checks:\n  - file: /tmp/heartbeat\n    max_age: 2s\n  - process: service\n"
	if err := os.WriteFile(filepath.Join(dir, "healthcheck.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type hcHealth struct {
	Status string
	Log    []struct {
		ExitCode int
		Output   string
	}
}

func hcInspect(t *testing.T, host, name string) hcHealth {
	t.Helper()
	out := hcMustDocker(t, host, "inspect", "-f", "{{json .State.Health}}", name)
	var h hcHealth
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("inspect %s: %v: %s", name, err, out)
	}
	return h
}

// hcWaitStatus polls the engine until the container's health status is want.
func hcWaitStatus(t *testing.T, host, name, want string) hcHealth {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var h hcHealth
	for time.Now().Before(deadline) {
		h = hcInspect(t, host, name)
		if h.Status == want {
			return h
		}
		if state := hcMustDocker(t, host, "inspect", "-f", "{{.State.Status}}", name); state != "running" {
			logs, _ := hcDocker(t, host, "logs", name)
			t.Fatalf("container %s is %s: %s", name, state, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: health %q after 60s, want %q; log %+v", name, h.Status, want, h.Log)
	return h
}

func TestHealthcheckUnderDocker(t *testing.T) {
	host := testenv.Docker(t)
	if _, err := exec.LookPath("docker"); err != nil {
		prereq.Missing(t, "docker CLI not installed")
	}
	ctxDir := hcBuildContext(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	suffix := hex.EncodeToString(rnd[:])

	scenarios := []struct {
		name        string
		healthcheck string // the HEALTHCHECK CMD in exec form
		breakAction string
		fixAction   string
		wantLine    string // in the health log once unhealthy
	}{
		{"http", `["/healthcheck", "http", "http://127.0.0.1:8080/health", "--timeout", "2s"]`, "break", "fix",
			"unhealthy: http 127.0.0.1:8080/health: status 503 (want 200-399): service broken"},
		{"listen", `["/healthcheck", "listen", "service", "9090"]`, "port-close", "port-open",
			`unhealthy: listen process "service" (pid 1) holds no listening socket on port 9090`},
		{"file", `["/openstack/healthcheck"]`, "file-stop", "file-start",
			"unhealthy: file /tmp/heartbeat: modified"},
		// A 200 whose body is cut off is not healthy, as curl -f says (exit 18).
		{"http-cut", `["/healthcheck", "http", "http://127.0.0.1:8080/health", "--timeout", "2s"]`, "cut", "whole",
			"unhealthy: http 127.0.0.1:8080/health: status 200, body cut off: connection closed before the end of the body"},
		// The liveness case of TripleO's healthcheck_curl (curl -k): a certificate for the host's
		// name, not the 127.0.0.1 probed, is healthy with --insecure, never restarted for it.
		{"https-insecure", `["/healthcheck", "http", "--insecure", "https://127.0.0.1:8443/health", "--timeout", "2s"]`, "break", "fix",
			"unhealthy: http 127.0.0.1:8443/health: status 503 (want 200-399): service broken"},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			dockerfile := "FROM scratch\n" +
				"COPY service /service\n" +
				"COPY healthcheck /healthcheck\n" +
				"COPY openstack /openstack\n" +
				"COPY healthcheck.yaml /etc/healthcheck.yaml\n" +
				"HEALTHCHECK --interval=1s --timeout=3s --retries=2 CMD " + sc.healthcheck + "\n" +
				"ENTRYPOINT [\"/service\"]\n"
			df := filepath.Join(ctxDir, "Dockerfile."+sc.name)
			if err := os.WriteFile(df, []byte(dockerfile), 0o644); err != nil {
				t.Fatal(err)
			}
			image := "vitals-e2e-healthcheck-" + sc.name + ":" + suffix
			name := "vitals-e2e-hc-" + sc.name + "-" + suffix
			hcMustDocker(t, host, "build", "-q", "-f", df, "-t", image, ctxDir)
			t.Cleanup(func() {
				_, _ = hcDocker(t, host, "rm", "-f", name)
				_, _ = hcDocker(t, host, "rmi", "-f", image)
			})
			hcMustDocker(t, host, "run", "-d", "--name", name, "--network", "none", image)

			// Before the first interval the engine has no verdict yet.
			if h := hcInspect(t, host, name); h.Status != "starting" {
				t.Errorf("first status %q, want starting", h.Status)
			}
			h := hcWaitStatus(t, host, name, "healthy")
			last := h.Log[len(h.Log)-1]
			if last.ExitCode != 0 || !strings.HasPrefix(last.Output, "healthy: ") || strings.Count(last.Output, "\n") != 1 {
				t.Errorf("healthy log entry %+v, want exit 0 and one line starting with healthy:", last)
			}
			t.Logf("healthy: %q", strings.TrimSpace(last.Output))

			hcMustDocker(t, host, "exec", name, "/service", "ctl", sc.breakAction)
			h = hcWaitStatus(t, host, name, "unhealthy")
			last = h.Log[len(h.Log)-1]
			if last.ExitCode != 1 || !strings.HasPrefix(last.Output, sc.wantLine) || strings.Count(last.Output, "\n") != 1 {
				t.Errorf("unhealthy log entry %+v, want exit 1 and one line starting with %q", last, sc.wantLine)
			}
			t.Logf("unhealthy: %q", strings.TrimSpace(last.Output))

			hcMustDocker(t, host, "exec", name, "/service", "ctl", sc.fixAction)
			h = hcWaitStatus(t, host, name, "healthy")
			if last = h.Log[len(h.Log)-1]; last.ExitCode != 0 {
				t.Errorf("healthy again with %+v", last)
			}
		})
	}
}

// TestHealthcheckUnderPodman runs the http scenario under Podman, the second engine. Without systemd
// Podman has no timer for HEALTHCHECK, so the test runs `podman healthcheck run` itself, as the engine's
// timer would. testenv.Podman skips it without Podman, and fails it then under VITALS_TESTENV_REQUIRED=1.
func TestHealthcheckUnderPodman(t *testing.T) {
	bin := testenv.Podman(t)
	ctxDir := hcBuildContext(t)
	store, err := os.MkdirTemp("", "vitals-podman-")
	if err != nil {
		t.Fatal(err)
	}
	// runc: crun refuses hybrid cgroup hosts; cgroupfs and file events: no systemd here.
	base := []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
		"--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"}
	podman := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(append([]string{}, base...), args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := podman(args...)
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	name, image := "vitals-e2e-hc-podman", "localhost/vitals-e2e-healthcheck-podman:latest"
	t.Cleanup(func() {
		_, _ = podman("rm", "-f", "-t", "0", name)
		_, _ = podman("rmi", "-f", image)
		_ = os.RemoveAll(store)
	})
	df := filepath.Join(ctxDir, "Dockerfile.podman")
	dockerfile := "FROM scratch\nCOPY service /service\nCOPY healthcheck /healthcheck\n" +
		"HEALTHCHECK --interval=1s --timeout=3s --retries=2 CMD [\"/healthcheck\", \"http\", \"http://127.0.0.1:8080/health\"]\n" +
		"ENTRYPOINT [\"/service\"]\n"
	if err := os.WriteFile(df, []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	must("build", "-q", "--format", "docker", "-f", df, "-t", image, ctxDir)
	// Root without CAP_SYS_RESOURCE cannot raise limits to Podman's defaults: pin them.
	nofile := "nofile=1024:1024"
	must("run", "-d", "--name", name, "--network", "none", "--ulimit", nofile, "--ulimit", "nproc=4096:4096", image)
	status := func() string { return must("inspect", "-f", "{{.State.Health.Status}}", name) }
	// run probes once as the engine's timer would, retrying while the service starts.
	run := func(want int) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := podman("healthcheck", "run", name)
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("healthcheck run: %v", err)
			}
			if code == want || time.Now().After(deadline) {
				if code != want {
					t.Fatalf("podman healthcheck run: exit %d (%s), want %d", code, out, want)
				}
				return out
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if s := status(); s != "starting" && s != "" {
		t.Errorf("first status %q, want starting", s)
	}
	run(0)
	if s := status(); s != "healthy" {
		t.Fatalf("status %q after a passing run, want healthy", s)
	}
	must("exec", name, "/service", "ctl", "break")
	run(1)
	run(1) // retries=2: the second failure flips the status
	if s := status(); s != "unhealthy" {
		t.Fatalf("status %q after two failures, want unhealthy", s)
	}
	logs := must("inspect", "-f", "{{range .State.Health.Log}}{{.Output}}{{end}}", name)
	if !strings.Contains(logs, "unhealthy: http 127.0.0.1:8080/health: status 503 (want 200-399): service broken") {
		t.Errorf("health log lacks our line: %q", logs)
	}
	must("exec", name, "/service", "ctl", "fix")
	run(0)
	if s := status(); s != "healthy" {
		t.Fatalf("status %q after the fix, want healthy", s)
	}
}

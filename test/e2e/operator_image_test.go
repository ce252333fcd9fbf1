package e2e

// The release image (deploy/Dockerfile) built for real in the private Docker engine: FROM scratch, from the
// two static binaries, so no registry is needed. The container runs as a non-root user and the engine's own
// evaluation of the image's HEALTHCHECK (our /healthcheck against the health port 8082) reaches healthy.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// imgBuildContext builds bin/vitals and bin/healthcheck as make build does (static), and copies the CA
// bundle as make ca-bundle does, into a fresh directory: the build context of deploy/Dockerfile.
func imgBuildContext(t *testing.T) string {
	t.Helper()
	root := opRepoRoot()
	dir := t.TempDir()
	for _, b := range []struct {
		out, pkg string
		tags     []string
	}{
		{"vitals", "./cmd/vitals", nil},
		{"healthcheck", "./cmd/healthcheck", []string{"-tags", "nethttpomithttp2"}},
	} {
		args := append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, b.tags...)
		args = append(args, "-o", filepath.Join(dir, b.out), b.pkg)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.pkg, err, out)
		}
	}
	bundle, err := os.ReadFile(imgCABundle)
	if err != nil {
		t.Fatalf("the image's CA bundle (Debian package ca-certificates): %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca-certificates.crt"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// imgCABundle is the build machine's CA bundle, which make ca-bundle copies into the image.
const imgCABundle = "/etc/ssl/certs/ca-certificates.crt"

// imgServeConfig is the smallest `vitals serve` config: it serves /livez on the operator's health port, the
// port the image's HEALTHCHECK asks.
const imgServeConfig = `listen: "127.0.0.1:8082"
checks:
  - name: goroutines
    type: goroutines
    max: 1000
    probes: [liveness]
    interval: 1s
`

func TestOperatorImage(t *testing.T) {
	parallel(t)
	host := testenv.Docker(t)
	if _, err := exec.LookPath("docker"); err != nil {
		prereq.Missing(t, "docker CLI not installed")
	}
	ctxDir := imgBuildContext(t)
	suffix := opRandHex(4)
	image := "vitals-e2e-image:" + suffix
	name := "vitals-e2e-image-" + suffix
	t.Cleanup(func() {
		_, _ = hcDocker(t, host, "rm", "-f", name)
		_, _ = hcDocker(t, host, "rmi", "-f", image)
	})
	df := filepath.Join(opRepoRoot(), "deploy", "Dockerfile")
	hcMustDocker(t, host, "build", "-q", "-f", df, "-t", image, ctxDir)

	var cfg struct {
		User        string
		Entrypoint  []string
		Cmd         []string
		Healthcheck struct{ Test []string }
	}
	out := hcMustDocker(t, host, "image", "inspect", "-f", "{{json .Config}}", image)
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("image config: %v: %s", err, out)
	}
	if cfg.User != "65532:65532" {
		t.Errorf("image user %q, want 65532:65532 (non-root)", cfg.User)
	}
	wantHC := []string{"CMD", "/healthcheck", "vitals", "http://127.0.0.1:8082/livez?verbose"}
	if !reflect.DeepEqual(cfg.Healthcheck.Test, wantHC) {
		t.Errorf("HEALTHCHECK %q, want exec form %q", cfg.Healthcheck.Test, wantHC)
	}
	if !reflect.DeepEqual(cfg.Entrypoint, []string{"/vitals"}) || !reflect.DeepEqual(cfg.Cmd, []string{"operator"}) {
		t.Errorf("entrypoint %q cmd %q, want [/vitals] [operator]", cfg.Entrypoint, cfg.Cmd)
	}
	if v := hcMustDocker(t, host, "run", "--rm", "--network", "none", image, "version"); !strings.HasPrefix(v, "vitals ") {
		t.Errorf("vitals version printed %q, want a line starting with vitals", v)
	}
	// The CA bundle is where Go's crypto/x509 looks for it, whole.
	cid := hcMustDocker(t, host, "create", image)
	t.Cleanup(func() { _, _ = hcDocker(t, host, "rm", "-f", cid) })
	hcMustDocker(t, host, "cp", cid+":"+imgCABundle, filepath.Join(ctxDir, "from-image.crt"))
	inImage, err := os.ReadFile(filepath.Join(ctxDir, "from-image.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := os.ReadFile(imgCABundle); !bytes.Equal(inImage, want) || !bytes.Contains(inImage, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Errorf("the image's %s (%d bytes) is not the build machine's CA bundle (%d bytes)", imgCABundle, len(inImage), len(want))
	}

	// vitals serve with the config mounted read-only (readable by the non-root user); the image's
	// HEALTHCHECK command unchanged, only its timing shortened for the test.
	cfgDir := t.TempDir()
	if err := os.Chmod(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "serve.yaml"), []byte(imgServeConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	hcMustDocker(t, host, "run", "-d", "--name", name, "--network", "none",
		"--health-interval", "1s", "--health-timeout", "3s", "--health-retries", "2",
		"-v", cfgDir+":/etc/vitals:ro", image, "serve", "--config", "/etc/vitals/serve.yaml")
	h := hcWaitStatus(t, host, name, "healthy")
	last := h.Log[len(h.Log)-1]
	if last.ExitCode != 0 || !strings.HasPrefix(last.Output, "healthy: ") {
		t.Errorf("health log entry %+v, want exit 0 and a line starting with healthy:", last)
	}
	t.Logf("healthy: %q", strings.TrimSpace(last.Output))
	if u := hcMustDocker(t, host, "inspect", "-f", "{{.Config.User}}", name); u != "65532:65532" {
		t.Errorf("container user %q, want 65532:65532", u)
	}
	// The process really runs with uid 65532 (the engine's view of the container's processes).
	if top := hcMustDocker(t, host, "top", name, "-o", "pid,uid,args"); !strings.Contains(top, "65532") {
		t.Errorf("docker top shows no uid 65532:\n%s", top)
	}
}

package test_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const module = "github.com/vitalsproject/vitals"

// harnessImporters are the packages, besides the harness itself, whose non-test code may import
// internal/test/...: the benchmarks and the simulator's command (a test and demo tool, its own binary).
var harnessImporters = []string{
	module + "/internal/test",
	module + "/bench",
	module + "/cmd/vitals-cloudsim",
	module + "/internal/cli/cloudsimcmd",
}

// TestProductionNeverImportsTheHarness fails when a non-test file of a package outside the harness, bench/
// and the simulator's command imports internal/test/... (the harness: testenv, cloudsim, faultproxy,
// benchproc, errbody), and when a production binary links it by any path.
func TestProductionNeverImportsTheHarness(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	out := goList(t, root, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || allowed(fields[0]) {
			continue
		}
		for _, imp := range fields[1:] {
			if inHarness(imp) {
				t.Errorf("%s imports %s: production code never imports the test harness (internal/test/...)", fields[0], imp)
			}
		}
	}
	for _, bin := range []string{"./cmd/vitals", "./cmd/vitals-agent", "./cmd/vitals-cni", "./cmd/vitals-canary", "./cmd/healthcheck"} {
		for _, dep := range strings.Fields(goList(t, root, "-deps", "-f", "{{.ImportPath}}", bin)) {
			if inHarness(dep) {
				t.Errorf("%s links %s: a production binary never links the test harness", bin, dep)
			}
		}
	}
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		pkg  string
		want bool
	}{
		{module + "/internal/test/testenv", true},
		{module + "/internal/test/cloudsim", true},
		{module + "/internal/testing", false},
		{module + "/bench/operator", true},
		{module + "/benchmarks", false},
		{module + "/cmd/vitals-cloudsim", true},
		{module + "/cmd/vitals", false},
		{module + "/internal/cli", false},
		{module + "/controllers/flight", false},
	} {
		if got := allowed(tc.pkg); got != tc.want {
			t.Errorf("allowed(%q) = %v, want %v", tc.pkg, got, tc.want)
		}
	}
}

func allowed(pkg string) bool {
	for _, p := range harnessImporters {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

func inHarness(pkg string) bool {
	p := module + "/internal/test"
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

func goList(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

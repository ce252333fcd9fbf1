package testenv

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// Tools built from their Go modules by hack/ scripts; hack/testenv.sh up exports their paths.
const (
	// EnvHelm names the helm binary built by hack/helm-build.sh.
	EnvHelm = "VITALS_TEST_HELM"
	// EnvPromtool names Prometheus' promtool built by hack/promtool-build.sh.
	EnvPromtool = "VITALS_TEST_PROMTOOL"
)

// Helm returns the path of the helm binary (built from its Go module by hack/helm-build.sh). It skips t
// (fails it when VITALS_TESTENV_REQUIRED=1) in -short runs and when the binary is not available.
func Helm(t testing.TB) string {
	t.Helper()
	return builtTool(t, "helm", EnvHelm, "hack/helm-build.sh")
}

// Promtool returns the path of Prometheus' promtool (built from its Go module by hack/promtool-build.sh),
// like Helm.
func Promtool(t testing.TB) string {
	t.Helper()
	return builtTool(t, "promtool", EnvPromtool, "hack/promtool-build.sh")
}

func builtTool(t testing.TB, name, env, script string) string {
	t.Helper()
	short(t, name+" test")
	s := load()
	s.checkFile(t)
	v, from := s.group(env, env)
	bin := v[env]
	if bin == "" {
		unavailable(t, "%s not available: %s or %s (%s unset)", name, makeHint, script, env)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		unavailable(t, "%s not available at %s (from %s): not an executable file (%v); run %s", name, bin, from, err, script)
	}
	return bin
}

// MustCheck returns what a health check constructor of package health/checks (and the packages under it)
// built, failing t when it refused its options: testenv.MustCheck(t)(checks.HTTP(opts)).
func MustCheck(t testing.TB) func(func(context.Context) error, error) func(context.Context) error {
	return func(f func(context.Context) error, err error) func(context.Context) error {
		t.Helper()
		if err != nil {
			t.Fatalf("build the check: %v", err)
		}
		return f
	}
}

// Skopeo returns the path of skopeo (Debian's, installed by hack/install-deps.sh), which pushes the release's
// OCI archives to a registry in the test of docs/getting-started.md. It skips t (fails it when
// VITALS_TESTENV_REQUIRED=1) in -short runs and when skopeo is not installed.
func Skopeo(t testing.TB) string {
	t.Helper()
	short(t, "skopeo test")
	bin, err := exec.LookPath("skopeo")
	if err != nil {
		unavailable(t, "skopeo not available: %v (apt-get install skopeo, or hack/install-deps.sh)", err)
	}
	return bin
}

package testenv

import (
	"os"
	"testing"
)

// EnvHelm names the helm binary built by hack/helm-build.sh (hack/testenv.sh up exports it).
const EnvHelm = "VITALS_TEST_HELM"

// Helm returns the path of the helm binary (built from its Go module by hack/helm-build.sh). It skips t
// (fails it when VITALS_TESTENV_REQUIRED=1) in -short runs and when the binary is not available.
func Helm(t testing.TB) string {
	t.Helper()
	short(t, "helm test")
	s := load()
	s.checkFile(t)
	v, from := s.group(EnvHelm, EnvHelm)
	bin := v[EnvHelm]
	if bin == "" {
		unavailable(t, "helm not available: %s or hack/helm-build.sh (%s unset)", makeHint, EnvHelm)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		unavailable(t, "helm not available at %s (from %s): not an executable file (%v); run hack/helm-build.sh", bin, from, err)
	}
	return bin
}

package testenv

import (
	"os/exec"
	"testing"
)

// OsloPython returns a python3 that imports oslo_middleware (Debian's python3-oslo.middleware, installed
// by hack/install-deps.sh), for tests that compare Vitals with oslo.middleware itself. It skips t (fails
// it when VITALS_TESTENV_REQUIRED=1) in -short runs and when there is none.
func OsloPython(t testing.TB) string {
	t.Helper()
	short(t, "oslo.middleware test")
	// Debian's interpreter first: a python3 earlier in PATH (pyenv, a venv) may lack Debian's packages.
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		bin, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(bin, "-c", "import oslo_middleware.healthcheck").Run() == nil {
			return bin
		}
	}
	unavailable(t, "oslo.middleware not available: no python3 imports oslo_middleware (apt-get install python3-oslo.middleware, or hack/install-deps.sh)")
	return ""
}

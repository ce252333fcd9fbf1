package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Podman returns the path of the podman binary (Debian's podman, installed by hack/install-deps.sh) for the
// tests that run the container healthcheck under the second engine. Podman runs rootful there, with its own
// storage per test. It skips t (fails it when VITALS_TESTENV_REQUIRED=1) in -short runs, when podman is not
// installed and when the test does not run as root.
func Podman(t testing.TB) string {
	t.Helper()
	short(t, "Podman test")
	bin, err := exec.LookPath("podman")
	if err != nil {
		unavailable(t, "Podman not available: %v (apt-get install podman, or hack/install-deps.sh)", err)
	}
	if os.Geteuid() != 0 {
		unavailable(t, "Podman not available: the Podman tests run rootful and this process is not root")
	}
	return bin
}

package cnireport

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStdlibOnly keeps the package importable by a CNI plugin without linking anything but the standard
// library.
func TestStdlibOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/vitalsproject/vitals/cnireport" {
			t.Errorf("cnireport depends on %s; it must use the standard library only", p)
		}
	}
}

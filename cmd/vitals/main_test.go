package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoSimulator keeps the OpenStack simulator and the fault proxy, test and demo tools, out of the
// production binary (the simulator has its own: vitals-cloudsim).
func TestLinksNoSimulator(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/vitalsproject/vitals/internal/test/cloudsim", "github.com/vitalsproject/vitals/internal/test/faultproxy"} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("vitals links %s", p)
			}
		}
	}
}

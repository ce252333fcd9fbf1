package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoOperator keeps the node agent's binary free of what the operator needs: it runs on every
// node, and each package linked in costs memory on each of them.
func TestLinksNoOperator(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"sigs.k8s.io/controller-runtime", "github.com/gophercloud/", "github.com/vitalsproject/vitals/operator", "github.com/vitalsproject/vitals/internal/test/cloudsim"} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("vitals-agent links %s", p)
			}
		}
	}
}

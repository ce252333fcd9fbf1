package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// TestKubernetesType: the kubernetes type, declared by its own package, is offered by serve and
// asks the real API server; a kubeconfig that names a closed port fails with the reason.
func TestKubernetesType(t *testing.T) {
	path := testenv.KubeconfigPath(t)
	run := func(kubeconfig string) error {
		t.Helper()
		c, err := Parse("t.yaml", []byte("checks:\n  - name: k\n    type: kubernetes\n    kubeconfig: "+kubeconfig+"\n    timeout: 5s\n"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.HealthChecks()[0].Run(ctx)
	}
	if err := run(path); err != nil {
		t.Errorf("real API server: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	host := testenv.Kube(t).Host
	closed := filepath.Join(t.TempDir(), "closed.kubeconfig")
	if err := os.WriteFile(closed, []byte(strings.ReplaceAll(string(data), host, "https://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(closed); err == nil || !strings.Contains(err.Error(), "kube-apiserver /readyz") {
		t.Errorf("closed port: %v", err)
	}
	if _, err := Parse("t.yaml", []byte("checks:\n  - name: k\n    type: kubernetes\n    kubeconfig: /nonexistent\n")); err == nil ||
		!strings.Contains(err.Error(), "t.yaml:2: checks[0]: invalid kubernetes check: read kubeconfig /nonexistent") {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

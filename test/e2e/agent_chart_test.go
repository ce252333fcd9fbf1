package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// TestAgentChartBindsNodeAddress: the agent's health server, on the host network, binds to the node's
// address the kubelet probes (status.hostIP through the downward API), not to every interface of the host.
func TestAgentChartBindsNodeAddress(t *testing.T) {
	helm := testenv.Helm(t)
	agent := func(values string) map[string]any {
		t.Helper()
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, u := range decodeAll(t, []byte(runHelm(t, helm, "template", "vitals", chartDir(), "--namespace", "vitals-system", "-f", f))) {
			if u.GetKind() != "DaemonSet" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c, _ := containers[0].(map[string]any)
			return c
		}
		t.Fatal("no DaemonSet rendered")
		return nil
	}
	tests := []struct {
		name, values, want string
	}{
		{"the node's address", "agent:\n  enabled: true\n", "--bind-address=$(HOST_IP)"},
		{"an address given", "agent:\n  enabled: true\n  bindAddress: 192.0.2.7\n", "--bind-address=192.0.2.7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := agent(tc.values)
			args, _, _ := unstructured.NestedStringSlice(c, "args")
			if !slices.Contains(args, tc.want) {
				t.Errorf("agent args %q lack %s", args, tc.want)
			}
			env, _, _ := unstructured.NestedSlice(c, "env")
			found := false
			for _, e := range env {
				m, _ := e.(map[string]any)
				path, _, _ := unstructured.NestedString(m, "valueFrom", "fieldRef", "fieldPath")
				if m["name"] == "HOST_IP" && path == "status.hostIP" {
					found = true
				}
			}
			if !found {
				t.Errorf("agent env %v lacks HOST_IP from status.hostIP", env)
			}
		})
	}
}

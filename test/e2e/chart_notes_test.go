package e2e

// The chart's NOTES, as helm install prints them (a client-side dry run against the real test
// kube-apiserver, which helm asks for its version), say what was installed for each kind of values: the
// replicas (and that 0 stops the operator), where Secrets are read, remediation paused or in dry-run, the
// agent, and which monitoring objects are on (the dashboard's line; the Prometheus Operator's kinds are not
// served by the test API server, which helm's dry run asks).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

func TestChartNotes(t *testing.T) {
	helm := testenv.Helm(t)
	kubeconfig := testenv.KubeconfigPath(t)
	for _, tc := range []struct {
		name, values string
		want, absent []string
	}{
		{"defaults", "", []string{
			"is installed as release vitals in namespace vitals-system",
			"The operator: 2 replica(s) of Deployment vitals-operator.",
			"kubectl -n vitals-system rollout status deployment/vitals-operator",
			"It reads Secrets only in: vitals-system.",
			"kubectl -n vitals-system create configmap vitals-remediation --from-literal=paused=true",
			"Monitoring: ServiceMonitor off, PodMonitor off, PrometheusRule off, Grafana dashboard off",
		}, []string{"node agent", "replicas is 0", "Remediation is", "every Secret"}},
		{"replicas 0 paused named namespaces", "operator:\n  replicas: 0\n  watchNamespace: clusters\n  secrets:\n    namespaces: [team-a, clusters]\n" +
			"  remediation:\n    paused: true\n    pauseConfigMap: hold\n", []string{
			"The operator: 0 replica(s)",
			"replicas is 0: the operator does not run",
			"It reads Secrets only in: vitals-system, clusters, team-a.",
			"Remediation is paused: nothing is changed in the cloud.",
			"create configmap hold --from-literal=paused=true",
		}, nil},
		{"dry run and Secrets cluster-wide", "operator:\n  remediation:\n    dryRun: true\n  secrets:\n    clusterWide: true\n", []string{
			"Remediation is in dry-run",
			"It may read every Secret of the cluster (operator.secrets.clusterWide).",
		}, []string{"reads Secrets only in"}},
		// The dashboard alone: helm's dry run maps every object, and the test API server serves no
		// monitoring.coreos.com kinds.
		{"agent and dashboard", "agent:\n  enabled: true\n  port: 9090\nmetrics:\n  dashboard: {enabled: true}\n", []string{
			"The node agent: DaemonSet vitals-agent (health server on each node's port 9090).",
			"Monitoring: ServiceMonitor off, PodMonitor off, PrometheusRule off, Grafana dashboard on",
		}, nil},
		{"agent alone", "operator:\n  enabled: false\nagent:\n  enabled: true\n", []string{"The node agent: DaemonSet vitals-agent"},
			[]string{"The operator:", "Secrets", "Peers discovered"}},
		{"agent with peers", "agent:\n  enabled: true\n  connectivity:\n    peers:\n      enabled: true\n", []string{
			"Peers discovered: canary DaemonSet vitals-agent-canary on the pod network",
			`CONNECTIVITY:.status.conditions[?(@.type=="PodNetworkConnectivity")].status`,
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"install", "vitals", chartDir(), "--namespace", "vitals-system", "--dry-run=client", "--kubeconfig", kubeconfig}
			if tc.values != "" {
				f := filepath.Join(testenv.ShortDir(t, "notes"), "values.yaml") // helm splits -f at commas
				if err := os.WriteFile(f, []byte(tc.values), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-f", f)
			}
			out := runHelm(t, helm, args...)
			_, notes, ok := strings.Cut(out, "\nNOTES:\n")
			if !ok {
				t.Fatalf("helm install printed no NOTES:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, notes)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(notes, a) {
					t.Errorf("NOTES say %q, which these values do not ask for:\n%s", a, notes)
				}
			}
			if tc.name == "defaults" {
				t.Logf("NOTES:\n%s", notes)
			}
		})
	}
}

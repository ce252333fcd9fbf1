package e2e

// The chart's values as an operator uses them, rendered by real Helm: zero values stay zero, typos and wrong
// types fail helm template (values.schema.json), the Secrets RBAC modes grant get on Secrets exactly where
// asked (chart_metrics_test.go: the alert rules and the dashboard name the metrics and labels the code exports).

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// chartTemplate runs helm template with values (a values file's text) and returns its output and error.
func chartTemplate(t *testing.T, helm, ns, values string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"template", "vitals", chartDir(), "--namespace", ns}, chartMonitoringAPIs...)
	if values != "" {
		f := filepath.Join(dir, "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", f)
	}
	out, err := helmCmd(t, helm, args...).CombinedOutput()
	return string(out), err
}

// chartMonitoringAPIs tell helm template that the cluster serves the Prometheus Operator's kinds, as one
// with its CRDs does (the chart renders each monitoring object only where its kind is served).
var chartMonitoringAPIs = []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
	"--api-versions", "monitoring.coreos.com/v1/PodMonitor", "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"}

func chartObjects(t *testing.T, helm, values string) []*unstructured.Unstructured {
	t.Helper()
	out, err := chartTemplate(t, helm, "vitals-system", values)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	return decodeAll(t, []byte(out))
}

func chartFind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var found []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == kind {
			found = append(found, u)
		}
	}
	return found
}

func TestOperatorChartZeroValues(t *testing.T) {
	helm := testenv.Helm(t)
	tests := []struct {
		name, values string
		replicas     int64
		maxUnavail   int64 // of the PodDisruptionBudget; -1: none rendered
		args         []string
		agentArgs    []string
	}{
		{"defaults", "", 2, 1, []string{"--kube-api-qps=100", "--kube-api-burst=200", "--workload-qps=20", "--workload-burst=40", "--health-port=8082"}, nil},
		{"kube API limits", "operator:\n  kubeAPI:\n    qps: 200\n    burst: 400\n", 2, 1, []string{"--kube-api-qps=200", "--kube-api-burst=400"}, nil},
		{"replicas 0", "operator:\n  replicas: 0\n", 0, 1, nil, nil},
		{"no pdb", "operator:\n  podDisruptionBudget:\n    enabled: false\n", 2, -1, nil, nil},
		{"pdb 0", "operator:\n  podDisruptionBudget:\n    maxUnavailable: 0\n", 2, 0, nil, nil},
		{"agent zero budgets", "agent:\n  enabled: true\n  cniFailuresCount: 0\n  maxMemoryUsage: 0\n", 2, 1, nil,
			[]string{"--cni-failures-count=0", "--max-memory-usage=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := chartObjects(t, helm, tc.values)
			deps := chartFind(objs, "Deployment")
			if len(deps) != 1 {
				t.Fatalf("%d Deployments rendered, want 1", len(deps))
			}
			if got := chartInt(deps[0], "spec", "replicas"); got != tc.replicas {
				t.Errorf("replicas %d, want %d", got, tc.replicas)
			}
			chartHasArgs(t, deps[0], tc.args)
			pdbs := chartFind(objs, "PodDisruptionBudget")
			switch {
			case tc.maxUnavail < 0 && len(pdbs) != 0:
				t.Errorf("%d PodDisruptionBudgets rendered, want none", len(pdbs))
			case tc.maxUnavail >= 0 && len(pdbs) != 1:
				t.Errorf("%d PodDisruptionBudgets rendered, want 1", len(pdbs))
			case tc.maxUnavail >= 0:
				if got := chartInt(pdbs[0], "spec", "maxUnavailable"); got != tc.maxUnavail {
					t.Errorf("PodDisruptionBudget maxUnavailable %d, want %d", got, tc.maxUnavail)
				}
			}
			if ds := chartFind(objs, "DaemonSet"); len(tc.agentArgs) > 0 {
				if len(ds) != 1 {
					t.Fatalf("%d DaemonSets rendered, want 1", len(ds))
				}
				chartHasArgs(t, ds[0], tc.agentArgs)
			}
		})
	}
}

// chartInt returns a number of a rendered object (decoded as JSON: float64), -1 when it is not a number.
func chartInt(u *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

func chartHasArgs(t *testing.T, u *unstructured.Unstructured, want []string) {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	c, _ := containers[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, a := range want {
		if !slices.Contains(args, a) {
			t.Errorf("%s args %v lack %s", u.GetKind(), args, a)
		}
	}
}

// TestOperatorChartSchema: values.schema.json refuses typos and wrong types with the path of the value.
func TestOperatorChartSchema(t *testing.T) {
	helm := testenv.Helm(t)
	tests := []struct{ name, values, want string }{
		{"typo", "operator:\n  replicass: 1\n", "replicass"},
		{"typo in monitoring", "metrics:\n  serviceMonitor:\n    enable: true\n", "enable"},
		{"typo at the top", "agnet:\n  enabled: true\n", "agnet"},
		{"string for a number", "operator:\n  replicas: \"2\"\n", "/operator/replicas"},
		{"negative replicas", "operator:\n  replicas: -1\n", "/operator/replicas"},
		{"string for a bool", "agent:\n  enabled: \"yes\"\n", "/agent/enabled"},
		{"bad duration", "operator:\n  remediation:\n    window: an hour\n", "/operator/remediation/window"},
		{"bad port", "agent:\n  port: 70000\n", "/agent/port"},
		{"zero kube API qps", "operator:\n  kubeAPI:\n    qps: 0\n", "/operator/kubeAPI/qps"},
		{"unknown log level", "operator:\n  logLevel: verbose\n", "/operator/logLevel"},
		{"secrets namespaces not a list", "operator:\n  secrets:\n    namespaces: team-a\n", "/operator/secrets/namespaces"},
		{"typo in resources", "operator:\n  resources:\n    limit: {memory: 1Gi}\n", "limit"},
		{"typo in the agent's resources", "agent:\n  resources:\n    request: {cpu: 10m}\n", "request"},
		{"typo in a toleration", "agent:\n  tolerations:\n    - {key: dedicated, operator: Exists, efect: NoSchedule}\n", "efect"},
		{"unknown toleration operator", "operator:\n  tolerations:\n    - {key: dedicated, operator: In}\n", "/operator/tolerations/0/operator"},
		{"both monitors", "metrics:\n  serviceMonitor: {enabled: true}\n  podMonitor: {enabled: true}\n", "not both"},
		{"runtime extension without the enrolment", "operator:\n  capi:\n    runtimeExtension:\n      enabled: true\n      certSecret: vitals-extension-tls\n",
			"operator.capi.runtimeExtension.enabled needs operator.capi.enrol"},
		{"typo in affinity", "operator:\n  affinity:\n    podAntiAfinity: {}\n", "podAntiAfinity"},
		{"misspelt enrolment deletion policy", "operator:\n  capi:\n    enrol: true\n    enrolDeletionPolicy: orphan\n", "/operator/capi/enrolDeletionPolicy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := chartTemplate(t, helm, "vitals-system", tc.values)
			if err == nil {
				t.Fatalf("helm template accepted %q", tc.values)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("helm template refused %q without naming %s:\n%s", tc.values, tc.want, out)
			}
		})
	}
}

// TestOperatorChartSecretsRBAC: where the operator's ServiceAccount may get Secrets, by mode. It never lists
// or watches them, and no other role of the chart grants Secrets.
func TestOperatorChartSecretsRBAC(t *testing.T) {
	helm := testenv.Helm(t)
	tests := []struct {
		name, values string
		want         []string // namespaces with get on Secrets; "*": cluster-wide
	}{
		{"defaults: the release's namespace", "", []string{"vitals-system"}},
		{"watched namespace", "operator:\n  watchNamespace: team-a\n", []string{"team-a", "vitals-system"}},
		{"named list", "operator:\n  secrets:\n    namespaces: [team-b, team-a, vitals-system]\n", []string{"team-a", "team-b", "vitals-system"}},
		{"cluster-wide when asked", "operator:\n  secrets:\n    clusterWide: true\n    namespaces: [team-a]\n", []string{"*"}},
		{"agent adds nothing", "agent:\n  enabled: true\n", []string{"vitals-system"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := chartObjects(t, helm, tc.values)
			roles := map[string][]any{} // kind/namespace/name -> rules
			for _, u := range objs {
				if u.GetKind() == "Role" || u.GetKind() == "ClusterRole" {
					rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
					roles[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = rules
				}
			}
			var got []string
			for _, u := range objs {
				if u.GetKind() != "RoleBinding" && u.GetKind() != "ClusterRoleBinding" {
					continue
				}
				kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
				name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
				ns := ""
				if kind == "Role" {
					ns = u.GetNamespace()
				}
				for _, r := range roles[kind+"/"+ns+"/"+name] {
					rule, _ := r.(map[string]any)
					res, _, _ := unstructured.NestedStringSlice(rule, "resources")
					if !slices.Contains(res, "secrets") {
						continue
					}
					verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
					if !slices.Equal(verbs, []string{"get"}) {
						t.Errorf("%s %s grants %v on Secrets, want only get", kind, name, verbs)
					}
					subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
					for _, s := range subjects {
						sm, _ := s.(map[string]any)
						if sm["name"] != "vitals-operator" {
							t.Errorf("%s %s grants Secrets to %v, want the operator only", u.GetKind(), u.GetName(), sm["name"])
						}
					}
					where := u.GetNamespace()
					if u.GetKind() == "ClusterRoleBinding" {
						where = "*"
					}
					got = append(got, where)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("get on Secrets in %v, want %v", got, tc.want)
			}
		})
	}
}

// chartCheckMonitoring checks a monitoring.coreos.com object the test apiserver cannot validate: the
// monitors scrape /metrics on a port the selected pods name, the rules are well formed.
func chartCheckMonitoring(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	switch u.GetKind() {
	case "ServiceMonitor", "PodMonitor":
		field := "endpoints"
		if u.GetKind() == "PodMonitor" {
			field = "podMetricsEndpoints"
		}
		eps, _, _ := unstructured.NestedSlice(u.Object, "spec", field)
		if len(eps) != 1 {
			t.Errorf("%s %s: %d endpoints, want 1", u.GetKind(), u.GetName(), len(eps))
			return
		}
		ep, _ := eps[0].(map[string]any)
		if ep["path"] != "/metrics" || (ep["port"] != "metrics" && ep["port"] != "health") {
			t.Errorf("%s %s scrapes port %v path %v", u.GetKind(), u.GetName(), ep["port"], ep["path"])
		}
	case "PrometheusRule":
		groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
		n := 0
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				rm, _ := r.(map[string]any)
				if rm["alert"] == nil || rm["expr"] == nil {
					t.Errorf("PrometheusRule %s: rule without alert or expr: %v", u.GetName(), rm)
				}
				n++
			}
		}
		if n == 0 {
			t.Errorf("PrometheusRule %s holds no rules", u.GetName())
		}
	}
}

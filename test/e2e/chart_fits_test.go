package e2e

// The chart fits clusters other than the default one, rendered by real Helm: a restricted pod security policy
// (OpenShift's restricted SCC assigns the user and group itself; the Pod Security Admission's restricted
// profile of the real kube-apiserver judges the operator's pod), an air-gapped registry mirror, a
// ServiceAccount of the cluster's own, extra volumes, and the monitoring a kube-prometheus-stack selects.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// chartOpenShiftValues are what an OpenShift user sets for the restricted(-v2) SCC: no user or group of the
// chart's own (the SCC gives one of the namespace's range), everything else as by default.
const chartOpenShiftValues = "operator:\n  podSecurityContext:\n    runAsUser: null\n    runAsGroup: null\n"

// chartOperatorPod returns the pod template's spec of the operator's Deployment of a rendering.
func chartOperatorPod(t *testing.T, objs []*unstructured.Unstructured) corev1.PodSpec {
	t.Helper()
	deps := chartFind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments rendered, want 1", len(deps))
	}
	m, _, _ := unstructured.NestedMap(deps[0].Object, "spec", "template", "spec")
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
		t.Fatalf("the operator's pod spec: %v", err)
	}
	return spec
}

// TestChartFitsRestrictedPolicy: with the defaults (unchanged: user and group 65532) and with OpenShift's
// values (no user or group), the schema accepts the values and the operator's pod passes the restricted
// Pod Security Standard, as the real kube-apiserver's admission enforces it on a namespace labelled so
// (a server-side dry-run of the pod).
func TestChartFitsRestrictedPolicy(t *testing.T) {
	helm := testenv.Helm(t)
	cfg := testenv.Kube(t)
	c := opClient(t, cfg)
	ns := opNamespace(t, c)
	ctx := context.Background()
	nsObj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
	if err := c.Update(ctx, nsObj); err != nil {
		t.Fatalf("label the namespace restricted: %v", err)
	}
	// The pods run as a ServiceAccount of their own namespace (no controller-manager makes "default" here).
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "vitals-operator", Namespace: ns}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, values string
		user         *int64 // want runAsUser (nil: none)
	}{
		{"defaults", "", ptrTo(int64(65532))},
		{"openshift", chartOpenShiftValues, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := chartOperatorPod(t, chartObjects(t, helm, tc.values))
			psc := spec.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Fatalf("pod securityContext %+v: want runAsNonRoot", psc)
			}
			switch {
			case tc.user == nil && (psc.RunAsUser != nil || psc.RunAsGroup != nil):
				t.Errorf("runAsUser %v, runAsGroup %v: want none (the SCC assigns them)", psc.RunAsUser, psc.RunAsGroup)
			case tc.user != nil && (psc.RunAsUser == nil || *psc.RunAsUser != *tc.user):
				t.Errorf("runAsUser %v, want %d", psc.RunAsUser, *tc.user)
			}
			sc := spec.Containers[0].SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
				!slices.Contains(sc.Capabilities.Drop, "ALL") || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("container securityContext %+v: want no privilege escalation, all capabilities dropped, a read-only root", sc)
			}
			spec.ServiceAccountName = sa.Name
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vitals-restricted-" + tc.name, Namespace: ns}, Spec: spec}
			if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
				t.Errorf("the operator's pod in a namespace enforcing the restricted profile: %v", err)
			}
		})
	}
	// The admission really enforces: a pod of the chart's that runs as root is refused.
	t.Run("refused as root", func(t *testing.T) {
		spec := chartOperatorPod(t, chartObjects(t, helm, "operator:\n  podSecurityContext:\n    runAsNonRoot: false\n    runAsUser: 0\n"))
		spec.ServiceAccountName = sa.Name
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vitals-restricted-root", Namespace: ns}, Spec: spec}
		if err := c.Create(ctx, pod, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "restricted") {
			t.Errorf("a root pod in a namespace enforcing the restricted profile: %v, want refused", err)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

// TestChartImageRegistry: image.registry, else global.imageRegistry, goes before every image's repository
// (the operator's, the agent's and the canary's); agent.image.registry wins for the agent's.
func TestChartImageRegistry(t *testing.T) {
	helm := testenv.Helm(t)
	agent := "agent:\n  enabled: true\n  connectivity:\n    peers:\n      enabled: true\n"
	tests := []struct {
		name, values        string
		operator, agentRepo string // image prefixes
	}{
		{"none", agent, "vitalsproject/vitals:", "vitalsproject/vitals-agent:"},
		{"image.registry", agent + "image:\n  registry: mirror.example:5000/\n", "mirror.example:5000/vitalsproject/vitals:", "mirror.example:5000/vitalsproject/vitals-agent:"},
		{"global.imageRegistry", agent + "global:\n  imageRegistry: mirror.example/hub\n", "mirror.example/hub/vitalsproject/vitals:", "mirror.example/hub/vitalsproject/vitals-agent:"},
		{"image.registry wins", agent + "global:\n  imageRegistry: g.example\nimage:\n  registry: i.example\n", "i.example/vitalsproject/vitals:", "i.example/vitalsproject/vitals-agent:"},
		{"agent's own", strings.Replace(agent, "  enabled: true\n", "  enabled: true\n  image:\n    registry: a.example\n", 1) + "image:\n  registry: i.example\n",
			"i.example/vitalsproject/vitals:", "a.example/vitalsproject/vitals-agent:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := chartObjects(t, helm, tc.values)
			if got := chartOperatorPod(t, objs).Containers[0].Image; !strings.HasPrefix(got, tc.operator) {
				t.Errorf("operator image %s, want %s...", got, tc.operator)
			}
			ds := chartFind(objs, "DaemonSet")
			if len(ds) != 2 {
				t.Fatalf("%d DaemonSets rendered, want the agent's and the canary's", len(ds))
			}
			for _, d := range ds {
				containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				for _, ci := range containers {
					img, _, _ := unstructured.NestedString(ci.(map[string]any), "image")
					if !strings.HasPrefix(img, tc.agentRepo) {
						t.Errorf("%s: image %s, want %s...", d.GetName(), img, tc.agentRepo)
					}
				}
			}
		})
	}
}

// TestChartServiceAccountAndVolumes: serviceAccount.create false renders no ServiceAccount of the operator and
// binds every role (and the FlowSchema) to serviceAccount.name; annotations reach the one it creates; extra
// volumes and mounts reach the pod beside the chart's own.
func TestChartServiceAccountAndVolumes(t *testing.T) {
	helm := testenv.Helm(t)
	t.Run("existing", func(t *testing.T) {
		objs := chartObjects(t, helm, "serviceAccount:\n  create: false\n  name: platform-vitals\noperator:\n  secrets:\n    namespaces: [team-a]\n")
		for _, sa := range chartFind(objs, "ServiceAccount") {
			if sa.GetName() != "vitals-agent" {
				t.Errorf("ServiceAccount %s rendered with serviceAccount.create false", sa.GetName())
			}
		}
		if got := chartOperatorPod(t, objs).ServiceAccountName; got != "platform-vitals" {
			t.Errorf("serviceAccountName %q, want platform-vitals", got)
		}
		bindings := 0
		for _, u := range objs {
			if u.GetKind() != "RoleBinding" && u.GetKind() != "ClusterRoleBinding" || strings.Contains(u.GetName(), "agent") {
				continue
			}
			bindings++
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				if name, _, _ := unstructured.NestedString(s.(map[string]any), "name"); name != "platform-vitals" {
					t.Errorf("%s %s binds %s, want platform-vitals", u.GetKind(), u.GetName(), name)
				}
			}
		}
		if bindings < 3 {
			t.Errorf("%d bindings of the operator, want its ClusterRole's, its Secrets Roles' and its Leases'", bindings)
		}
		for _, fs := range chartFind(objs, "FlowSchema") {
			if b, _ := fs.MarshalJSON(); !strings.Contains(string(b), `"platform-vitals"`) {
				t.Errorf("FlowSchema %s does not match platform-vitals: %s", fs.GetName(), b)
			}
		}
	})
	t.Run("created with annotations and volumes", func(t *testing.T) {
		objs := chartObjects(t, helm, "serviceAccount:\n  annotations:\n    iam.example/role: vitals\noperator:\n"+
			"  extraVolumes:\n    - {name: ca-extra, configMap: {name: corp-ca}}\n  extraVolumeMounts:\n    - {name: ca-extra, mountPath: /etc/corp-ca, readOnly: true}\n")
		var found bool
		for _, sa := range chartFind(objs, "ServiceAccount") {
			if sa.GetName() == "vitals-operator" {
				found = sa.GetAnnotations()["iam.example/role"] == "vitals"
			}
		}
		if !found {
			t.Errorf("no ServiceAccount vitals-operator with the annotation")
		}
		spec := chartOperatorPod(t, objs)
		if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "ca-extra" && v.ConfigMap != nil }) ||
			!slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tmp" }) {
			t.Errorf("volumes %+v: want the chart's tmp and ca-extra", spec.Volumes)
		}
		if !slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "ca-extra" && m.MountPath == "/etc/corp-ca" }) {
			t.Errorf("mounts %+v: want ca-extra at /etc/corp-ca", spec.Containers[0].VolumeMounts)
		}
	})
}

// TestChartMonitoringTuning: metrics.labels reach every Prometheus Operator object (what a default
// kube-prometheus-stack selects on: release), each kind's own labels win; scrapeTimeout reaches the
// endpoints; a disabled alert is gone and the others stay; an unknown alert name fails.
func TestChartMonitoringTuning(t *testing.T) {
	helm := testenv.Helm(t)
	base := "agent:\n  enabled: true\nmetrics:\n  labels: {release: prometheus, team: platform}\n  prometheusRule:\n    enabled: true\n" +
		"    labels: {team: sre}\n    disabled: [VitalsOrphanedRoutes, VitalsAgentAbsent]\n"
	for _, kind := range []string{"serviceMonitor", "podMonitor"} {
		t.Run(kind, func(t *testing.T) {
			objs := chartObjects(t, helm, base+"  "+kind+":\n    enabled: true\n    scrapeTimeout: 20s\n")
			var monitoring int
			for _, u := range objs {
				if !strings.HasPrefix(u.GetAPIVersion(), "monitoring.coreos.com/") {
					continue
				}
				monitoring++
				l := u.GetLabels()
				wantTeam := "platform"
				if u.GetKind() == "PrometheusRule" {
					wantTeam = "sre"
				}
				if l["release"] != "prometheus" || l["team"] != wantTeam {
					t.Errorf("%s %s labels %v: want release=prometheus, team=%s", u.GetKind(), u.GetName(), l, wantTeam)
				}
				var endpoints []any
				switch u.GetKind() {
				case "ServiceMonitor":
					endpoints, _, _ = unstructured.NestedSlice(u.Object, "spec", "endpoints")
				case "PodMonitor":
					endpoints, _, _ = unstructured.NestedSlice(u.Object, "spec", "podMetricsEndpoints")
				}
				for _, e := range endpoints {
					if st, _, _ := unstructured.NestedString(e.(map[string]any), "scrapeTimeout"); st != "20s" {
						t.Errorf("%s %s: scrapeTimeout %q, want 20s", u.GetKind(), u.GetName(), st)
					}
				}
			}
			if monitoring < 3 {
				t.Errorf("%d monitoring objects, want the monitors of the operator and the agent and the rules", monitoring)
			}
			rules := chartFind(objs, "PrometheusRule")
			if len(rules) != 1 {
				t.Fatalf("%d PrometheusRules", len(rules))
			}
			b, _ := rules[0].MarshalJSON()
			for _, gone := range []string{"VitalsOrphanedRoutes", "VitalsAgentAbsent"} {
				if strings.Contains(string(b), `"`+gone+`"`) {
					t.Errorf("disabled alert %s rendered", gone)
				}
			}
			for _, kept := range []string{"VitalsRemediationBudgetExhausted", "VitalsAgentDown", "VitalsOperatorDown"} {
				if !strings.Contains(string(b), `"`+kept+`"`) {
					t.Errorf("alert %s missing", kept)
				}
			}
		})
	}
	out, err := chartTemplate(t, helm, "vitals-system", "metrics:\n  prometheusRule:\n    enabled: true\n    disabled: [VitalsOrphanedRoute]\n")
	if err == nil || !strings.Contains(out, `"VitalsOrphanedRoute" is none of the chart's alerts`) {
		t.Errorf("an unknown alert name: %v\n%s", err, out)
	}
}

// TestChartDashboardCovers: the dashboard shows the node repairs (flight's and Cluster API remediation's), deorbit
// and the remediation budget (TestChartMonitoringNamesExported proves each name is one the code exports).
func TestChartDashboardCovers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(), "dashboards", "vitals.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range []string{"vitals_flight_repairs_total", "vitals_flight_unhealthy_nodes", "vitals_remediate_steps_total",
		"vitals_remediate_stopped_total", "vitals_remediation_actions_total", "vitals_remediation_budget_remaining",
		"vitals_remediation_operator_budget_remaining", "vitals_remediation_operator_paused", "vitals_deorbit_phase",
		"vitals_deorbit_start_time_seconds", "vitals_deorbit_deletes_total", "vitals_deorbit_debris_left_total", "vitals_deorbit_debris{"} {
		if !strings.Contains(string(data), metric) {
			t.Errorf("the dashboard shows no %s", strings.TrimSuffix(metric, "{"))
		}
	}
}

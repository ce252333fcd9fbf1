package e2e

// The conventions a Helm user expects of a chart, rendered by real Helm: the packaged chart carries its
// README; an umbrella chart's condition (vitals.enabled) is accepted by the schema and switches the chart
// off; a changed configuration or CA bundle changes the pod template (checksum annotations), so that
// helm upgrade rolls the pods; priorityClassName, imagePullSecrets (global ones too), pod annotations and
// labels, extra environment and flags, image digests, commonLabels, nameOverride and fullnameOverride;
// sharded replicas spread over nodes and zones; the Prometheus Operator's kinds only where the cluster
// serves them; podCIDRLimit 0 stays 0.

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// chartPodSpec returns the pod template of the first Deployment (or DaemonSet) of objs.
func chartPodTemplate(t *testing.T, objs []*unstructured.Unstructured, kind string) map[string]any {
	t.Helper()
	ws := chartFind(objs, kind)
	if len(ws) != 1 {
		t.Fatalf("%d %s rendered, want 1", len(ws), kind)
	}
	tpl, _, _ := unstructured.NestedMap(ws[0].Object, "spec", "template")
	return tpl
}

func chartContainer(tpl map[string]any) map[string]any {
	cs, _, _ := unstructured.NestedSlice(tpl, "spec", "containers")
	c, _ := cs[0].(map[string]any)
	return c
}

func TestChartPackageCarriesREADME(t *testing.T) {
	helm := testenv.Helm(t)
	dir := t.TempDir()
	runHelm(t, helm, "package", chartDir(), "--destination", dir)
	pkgs, _ := filepath.Glob(filepath.Join(dir, "vitals-*.tgz"))
	if len(pkgs) != 1 {
		t.Fatalf("helm package wrote %v", pkgs)
	}
	f, err := os.Open(pkgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	for _, want := range []string{"vitals/README.md", "vitals/values.schema.json", "vitals/crds/vitals.vitalsproject.io_vitalsclusters.yaml", "vitals/dashboards/vitals.json"} {
		if !slices.Contains(names, want) {
			t.Errorf("the package lacks %s: %v", want, names)
		}
	}
	if readme := runHelm(t, helm, "show", "readme", pkgs[0]); !strings.Contains(readme, "# The vitals chart") {
		t.Errorf("helm show readme of the package: %.200q", readme)
	}
}

func TestChartConventions(t *testing.T) {
	helm := testenv.Helm(t)
	t.Run("checksums follow the configuration and the CA bundle", func(t *testing.T) {
		annotations := func(values string) map[string]string {
			tpl := chartPodTemplate(t, chartObjects(t, helm, values), "Deployment")
			a, _, _ := unstructured.NestedStringMap(tpl, "metadata", "annotations")
			return a
		}
		none := annotations("")
		if none["checksum/config"] != "" || none["checksum/ca-bundle"] != "" {
			t.Errorf("checksums without a configuration: %v", none)
		}
		a := annotations("operator:\n  config: |\n    [neutron]\n    timeout = 30\n")
		b := annotations("operator:\n  config: |\n    [neutron]\n    timeout = 60\n")
		if a["checksum/config"] == "" || a["checksum/config"] == b["checksum/config"] {
			t.Errorf("checksum/config %q and %q: want two different checksums for two configurations", a["checksum/config"], b["checksum/config"])
		}
		pem := "operator:\n  caBundle:\n    pem: |\n      " + strings.ReplaceAll(strings.TrimSpace(chartTestPEM), "\n", "\n      ") + "\n"
		c := annotations(pem)
		d := annotations(strings.Replace(pem, "MIIB", "MIIC", 1))
		if c["checksum/ca-bundle"] == "" || c["checksum/ca-bundle"] == d["checksum/ca-bundle"] {
			t.Errorf("checksum/ca-bundle %q and %q: want two different checksums for two bundles", c["checksum/ca-bundle"], d["checksum/ca-bundle"])
		}
	})

	t.Run("pod conventions of the operator and the agent", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("ab", 32)
		objs := chartObjects(t, helm, `imagePullSecrets: [{name: regcred}, mirror]
global:
  imagePullSecrets: [{name: from-umbrella}]
commonLabels: {team: platform}
image: {repository: registry.example/vitals/vitals, digest: `+digest+`}
operator:
  priorityClassName: high
  podAnnotations: {backup.velero.io/backup-volumes: ""}
  podLabels: {tier: control}
  extraEnv: [{name: HTTPS_PROXY, value: "http://proxy:3128"}, {name: GOMAXPROCS, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}]
  extraArgs: [--cloud-qps=5]
agent:
  enabled: true
  image: {repository: registry.example/vitals/vitals-agent, tag: v9}
  podAnnotations: {a: b}
  podLabels: {tier: node}
  extraEnv: [{name: NO_PROXY, value: .svc}]
`)
		for kind, want := range map[string]struct {
			image, label, annotation, env string
		}{
			"Deployment": {"registry.example/vitals/vitals@" + digest, "control", "backup.velero.io/backup-volumes", "HTTPS_PROXY"},
			"DaemonSet":  {"registry.example/vitals/vitals-agent:v9", "node", "a", "NO_PROXY"},
		} {
			tpl := chartPodTemplate(t, objs, kind)
			c := chartContainer(tpl)
			if c["image"] != want.image {
				t.Errorf("%s image %v, want %s", kind, c["image"], want.image)
			}
			secrets, _, _ := unstructured.NestedSlice(tpl, "spec", "imagePullSecrets")
			var names []string
			for _, s := range secrets {
				names = append(names, s.(map[string]any)["name"].(string))
			}
			if !slices.Equal(names, []string{"from-umbrella", "regcred", "mirror"}) {
				t.Errorf("%s imagePullSecrets %v, want the global one, then regcred and mirror", kind, names)
			}
			labels, _, _ := unstructured.NestedStringMap(tpl, "metadata", "labels")
			if labels["tier"] != want.label || labels["team"] != "platform" {
				t.Errorf("%s pod labels %v", kind, labels)
			}
			ann, _, _ := unstructured.NestedStringMap(tpl, "metadata", "annotations")
			if _, ok := ann[want.annotation]; !ok {
				t.Errorf("%s pod annotations %v lack %s", kind, ann, want.annotation)
			}
			env, _, _ := unstructured.NestedSlice(c, "env")
			found := false
			for _, e := range env {
				found = found || e.(map[string]any)["name"] == want.env
			}
			if !found {
				t.Errorf("%s env %v lacks %s", kind, env, want.env)
			}
		}
		dep := chartPodTemplate(t, objs, "Deployment")
		if pc, _, _ := unstructured.NestedString(dep, "spec", "priorityClassName"); pc != "high" {
			t.Errorf("operator priorityClassName %q", pc)
		}
		chartHasArgs(t, chartFind(objs, "Deployment")[0], []string{"--cloud-qps=5"})
		for _, u := range objs {
			if u.GetLabels()["team"] != "platform" {
				t.Errorf("%s %s lacks commonLabels team=platform: %v", u.GetKind(), u.GetName(), u.GetLabels())
			}
		}
	})

	t.Run("sharded replicas spread over nodes and zones", func(t *testing.T) {
		spread := func(values string) []any {
			tsc, _, _ := unstructured.NestedSlice(chartPodTemplate(t, chartObjects(t, helm, values), "Deployment"), "spec", "topologySpreadConstraints")
			return tsc
		}
		def := spread("")
		var keys []string
		for _, c := range def {
			m := c.(map[string]any)
			keys = append(keys, m["topologyKey"].(string))
			if m["whenUnsatisfiable"] != "ScheduleAnyway" {
				t.Errorf("the default spread must not keep a replica from scheduling: %v", m)
			}
		}
		if !slices.Equal(keys, []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}) {
			t.Errorf("two replicas spread over %v, want nodes and zones", keys)
		}
		if got := spread("operator:\n  replicas: 1\n"); len(got) != 0 {
			t.Errorf("one replica spreads: %v", got)
		}
		if got := spread("operator:\n  topologySpreadConstraints: []\n"); len(got) != 0 {
			t.Errorf("topologySpreadConstraints: [] still spreads: %v", got)
		}
		own := spread("operator:\n  topologySpreadConstraints:\n    - {maxSkew: 2, topologyKey: rack, whenUnsatisfiable: DoNotSchedule}\n")
		if len(own) != 1 || own[0].(map[string]any)["topologyKey"] != "rack" {
			t.Errorf("the values' own spread was replaced: %v", own)
		}
	})

	t.Run("names: nameOverride and fullnameOverride", func(t *testing.T) {
		for _, tc := range []struct {
			values, operator, agent, app string
		}{
			{"", "vitals-operator", "vitals-agent", "vitals"},
			{"fullnameOverride: health\n", "health-operator", "health-agent", "vitals"},
			{"nameOverride: osh\n", "vitals-osh-operator", "vitals-osh-agent", "osh"},
		} {
			objs := chartObjects(t, helm, tc.values+"agent:\n  enabled: true\n")
			if d := chartFind(objs, "Deployment")[0]; d.GetName() != tc.operator || d.GetLabels()["app.kubernetes.io/name"] != tc.app {
				t.Errorf("%q: Deployment %s labelled %v, want %s and name %s", tc.values, d.GetName(), d.GetLabels(), tc.operator, tc.app)
			}
			if d := chartFind(objs, "DaemonSet")[0]; d.GetName() != tc.agent {
				t.Errorf("%q: DaemonSet %s, want %s", tc.values, d.GetName(), tc.agent)
			}
			for _, sa := range chartFind(objs, "ServiceAccount") {
				if sa.GetName() != tc.operator && sa.GetName() != tc.agent {
					t.Errorf("%q: ServiceAccount %s", tc.values, sa.GetName())
				}
			}
		}
		if out, err := chartTemplate(t, helm, "vitals-system", "nameOverride: Not_A_Name\n"); err == nil || !strings.Contains(out, "/nameOverride") {
			t.Errorf("nameOverride Not_A_Name: %v\n%s", err, out)
		}
	})

	t.Run("metrics flags", func(t *testing.T) {
		dep := chartFind(chartObjects(t, helm, ""), "Deployment")[0]
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		for _, a := range args {
			if strings.HasPrefix(a, "--kubernetes-metric-names") || strings.HasPrefix(a, "--cluster-metrics") {
				t.Errorf("the defaults pass %s (the operator's defaults: Vitals' names, cluster metrics on)", a)
			}
		}
		dep = chartFind(chartObjects(t, helm, "metrics:\n  kubernetesMetricNames: true\n  clusterConditions: false\n"), "Deployment")[0]
		chartHasArgs(t, dep, []string{"--kubernetes-metric-names", "--cluster-metrics=false"})
	})

	t.Run("podCIDRLimit 0 is no limit and not the default", func(t *testing.T) {
		dep := chartFind(chartObjects(t, helm, "operator:\n  podCIDRLimit: {v4: 0, v6: 0}\n"), "Deployment")[0]
		chartHasArgs(t, dep, []string{"--pod-cidr-limit-v4=0", "--pod-cidr-limit-v6=0"})
		dep = chartFind(chartObjects(t, helm, ""), "Deployment")[0]
		chartHasArgs(t, dep, []string{"--pod-cidr-limit-v4=12", "--pod-cidr-limit-v6=44"})
	})

	t.Run("the Prometheus Operator's kinds only where the cluster serves them", func(t *testing.T) {
		values := "agent:\n  enabled: true\nmetrics:\n  serviceMonitor: {enabled: true}\n  prometheusRule: {enabled: true}\n"
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		// No --api-versions: a cluster without the CRDs.
		objs := decodeAll(t, []byte(runHelm(t, helm, "template", "vitals", chartDir(), "--namespace", "vitals-system", "-f", f)))
		for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
			if n := len(chartFind(objs, kind)); n != 0 {
				t.Errorf("%d %s rendered for a cluster that does not serve it", n, kind)
			}
		}
		// Only the rule's kind served: the rule, and none of the absent() alerts (no monitor of the chart
		// scrapes the pods).
		objs = decodeAll(t, []byte(runHelm(t, helm, "template", "vitals", chartDir(), "--namespace", "vitals-system", "-f", f,
			"--api-versions", "monitoring.coreos.com/v1/PrometheusRule")))
		if len(chartFind(objs, "ServiceMonitor")) != 0 || len(chartFind(objs, "PrometheusRule")) != 1 {
			t.Fatalf("with PrometheusRule served only: %d ServiceMonitors, %d PrometheusRules", len(chartFind(objs, "ServiceMonitor")), len(chartFind(objs, "PrometheusRule")))
		}
		alerts := chartAlertNames(chartFind(objs, "PrometheusRule")[0])
		if slices.Contains(alerts, "VitalsOperatorAbsent") || slices.Contains(alerts, "VitalsAgentAbsent") {
			t.Errorf("absent() alerts without the chart's monitors: %v", alerts)
		}
		// Everything served, operator scaled to 0: the agent's absent() alert only.
		objs = chartObjects(t, helm, values+"operator:\n  replicas: 0\n")
		alerts = chartAlertNames(chartFind(objs, "PrometheusRule")[0])
		if slices.Contains(alerts, "VitalsOperatorAbsent") || !slices.Contains(alerts, "VitalsAgentAbsent") {
			t.Errorf("replicas 0: alerts %v, want VitalsAgentAbsent and not VitalsOperatorAbsent", alerts)
		}
	})

	t.Run("the schema takes an umbrella condition and the new values and refuses typos in them", func(t *testing.T) {
		if _, err := chartTemplate(t, helm, "vitals-system", "enabled: true\nglobal:\n  imagePullSecrets: [a]\n  storageClass: fast\n"); err != nil {
			t.Errorf("enabled and global values refused: %v", err)
		}
		for _, tc := range []struct{ values, want string }{
			{"imagePullSecrets: [{nam: regcred}]\n", "/imagePullSecrets/0"},
			{"operator:\n  extraEnv: [{name: A, valu: b}]\n", "/operator/extraEnv/0"},
			{"agent:\n  extraEnv: {A: b}\n", "/agent/extraEnv"},
			{"operator:\n  extraArgs: [cloud-qps=5]\n", "/operator/extraArgs/0"},
			{"image:\n  digest: latest\n", "/image/digest"},
			{"operator:\n  podAnnotations: {a: 1}\n", "/operator/podAnnotations/a"},
			{"metrics:\n  prometheusRule:\n    runbookURL: https://wiki.example/runbooks#top\n", "/metrics/prometheusRule/runbookURL"},
		} {
			out, err := chartTemplate(t, helm, "vitals-system", tc.values)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("%q: %v, want a refusal naming %s:\n%s", tc.values, err, tc.want, out)
			}
		}
	})
}

// chartAlertNames lists the alerts of a rendered PrometheusRule.
func chartAlertNames(u *unstructured.Unstructured) []string {
	var names []string
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			if a, ok := r.(map[string]any)["alert"].(string); ok {
				names = append(names, a)
			}
		}
	}
	return names
}

// TestChartUmbrella: the chart as a dependency of an umbrella chart, switched by condition: vitals.enabled
// (which Helm also hands the chart as its value enabled, which the schema must take), and the umbrella's
// global imagePullSecrets reaching the pods.
func TestChartUmbrella(t *testing.T) {
	helm := testenv.Helm(t)
	dir := t.TempDir()
	umbrella := filepath.Join(dir, "platform")
	if err := os.MkdirAll(umbrella, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n  - name: vitals\n    version: \">=0.0.0-0\"\n" +
			"    repository: file://" + chartDir() + "\n    condition: vitals.enabled\n",
		"values.yaml": "global:\n  imagePullSecrets: [{name: platform-registry}]\nvitals:\n  enabled: true\n  operator:\n    replicas: 1\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(umbrella, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runHelm(t, helm, "dependency", "update", umbrella)
	objs := decodeAll(t, []byte(runHelm(t, helm, "template", "p", umbrella, "--namespace", "platform")))
	deps := chartFind(objs, "Deployment")
	if len(deps) != 1 || chartInt(deps[0], "spec", "replicas") != 1 {
		t.Fatalf("the umbrella rendered %d Deployments (want 1, with the umbrella's replicas: 1)", len(deps))
	}
	secrets, _, _ := unstructured.NestedSlice(deps[0].Object, "spec", "template", "spec", "imagePullSecrets")
	if len(secrets) != 1 || secrets[0].(map[string]any)["name"] != "platform-registry" {
		t.Errorf("imagePullSecrets %v, want the umbrella's global platform-registry", secrets)
	}
	off := decodeAll(t, []byte(runHelm(t, helm, "template", "p", umbrella, "--namespace", "platform", "--set", "vitals.enabled=false")))
	if len(off) != 0 {
		t.Errorf("vitals.enabled=false rendered %d objects", len(off))
	}
	t.Logf("umbrella: %d objects with vitals.enabled, none without", len(objs))
}

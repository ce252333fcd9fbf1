package e2e

// The Helm chart rendered by real Helm (built from its Go module by hack/helm-build.sh): helm lint passes,
// and every object helm template renders, for the default values and the agent variants, passes a
// server-side dry run (strict field validation) against the real test kube-apiserver. The plain manifests
// (deploy/manifests/operator.yaml) are the chart's rendering for the defaults: hack/generate.sh writes them,
// and this test fails when they drift.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

func chartDir() string { return filepath.Join(opRepoRoot(), "deploy", "chart", "vitals") }

// helmCmd is helm with its own empty home (no repositories, no plugins, nothing from the machine).
func helmCmd(t *testing.T, helm string, args ...string) *exec.Cmd {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	return cmd
}

// runHelm runs helm (helmCmd) and returns its output; it fails t when helm fails.
func runHelm(t *testing.T, helm string, args ...string) string {
	t.Helper()
	cmd := helmCmd(t, helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// decodeAll splits a multi-document YAML stream into objects, skipping empty documents.
func decodeAll(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decode rendered YAML: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func TestOperatorChartLint(t *testing.T) {
	helm := testenv.Helm(t)
	for _, set := range [][]string{nil, {"--set", "agent.enabled=true"}, {"--set", "agent.enabled=true,agent.requireNetAdmin=true"},
		{"--set", "agent.enabled=true,agent.connectivity.peers.enabled=true"},
		{"--set", "agent.enabled=true,agent.cniReporter.install=true,agent.cniFailuresFailLiveness=false"}} {
		out := runHelm(t, helm, append([]string{"lint", "--strict", chartDir()}, set...)...)
		t.Logf("helm lint %v: %s", set, strings.TrimSpace(out))
	}
}

func TestOperatorChartServerSideDryRun(t *testing.T) {
	helm := testenv.Helm(t)
	cfg := testenv.Kube(t)
	// The CRD is really installed (idempotently), so that the API server serves the VitalsCluster kind; and Cluster
	// API's ExtensionConfig, the chart's registration of its runtime extension.
	opInstallCRD(t, cfg)
	capiCRDs(t, cfg, "runtime.cluster.x-k8s.io_extensionconfigs.yaml")
	ns := opNamespace(t, opClient(t, cfg))
	release := "v" + opRandHex(4)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	variants := []struct {
		name       string
		values     string // a values file
		wantKinds  []string
		wantAbsent []string
		netAdmin   bool
		wantArgs   []string // of the operator container
		alsoIn     []string // namespaces besides the release's that may hold Roles and RoleBindings
	}{
		{"defaults", "", []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
			"Role", "RoleBinding", "Deployment", "Service", "PodDisruptionBudget", "FlowSchema"}, []string{"DaemonSet"}, false,
			[]string{"--workload-qps=20", "--sharding", "--leader-elect=false", "--shard-ranges=16"}, nil}, // two replicas: sharded
		{"one-replica-leads", "operator:\n  replicas: 1\n", []string{"Deployment"}, nil, false, []string{"--leader-elect=true"}, nil},
		{"sharding-client-side", "operator:\n  replicas: 4\n  sharding:\n    ranges: 32\n    clientSide: true\n", []string{"Deployment"}, nil, false,
			[]string{"--sharding", "--shard-ranges=32", "--shard-client-side"}, nil},
		{"agent", "agent:\n  enabled: true\n", []string{"Deployment", "DaemonSet"}, nil, false, nil, []string{"default"}},
		{"agent-netadmin", "agent:\n  enabled: true\n  requireNetAdmin: true\n", []string{"DaemonSet"}, nil, true, nil, []string{"default"}},
		{"agent-cni-reporter", "agent:\n  enabled: true\n  cniReporter:\n    install: true\n", []string{"DaemonSet"}, nil, false, nil, []string{"default"}},
		{"agent-connectivity", "agent:\n  enabled: true\n  connectivity:\n    netns: /var/run/netns/probe\n    pods: [10.100.1.7:8080]\n" +
			"    services: [10.96.0.1:443]\n    dnsServer: 10.96.0.10\n    dnsNames: [kubernetes.default.svc.cluster.local]\n    interval: 20s\n",
			[]string{"DaemonSet"}, nil, false, nil, []string{"default"}},
		{"agent-peers", "agent:\n  enabled: true\n  connectivity:\n    peers:\n      enabled: true\n      sample: 20\n      minPeers: 4\n",
			[]string{"DaemonSet", "Service", "Role", "RoleBinding"}, nil, false, nil, []string{"default"}},
		{"watch-namespace-credentials", "operator:\n  watchNamespace: " + ns + "\n  cloudsSecret: os-creds\n" +
			"  config: |\n    [neutron]\n    timeout = 30\nmetrics:\n  service: false\n",
			[]string{"Deployment", "ConfigMap"}, []string{"Service", "DaemonSet"}, false, nil, nil},
		{"ca-bundle", "operator:\n  cloudsSecret: os-creds\n  caBundle:\n    pem: |\n      " + strings.ReplaceAll(strings.TrimSpace(chartTestPEM), "\n", "\n      ") + "\n",
			[]string{"Deployment", "ConfigMap"}, nil, false, nil, nil},
		{"local-workload", "operator:\n  workload:\n    allowLocal: true\n    allowInsecure: true\n    allowLoopback: true\n    qps: 5\n    burst: 10\n",
			[]string{"Deployment", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, nil, false,
			[]string{"--allow-local-workload", "--allow-insecure-workload", "--allow-loopback-workload", "--workload-qps=5", "--workload-burst=10"},
			[]string{"kube-node-lease", "kube-system"}}, // the node Leases' list, the consumers' Secrets, as on a workload cluster (deploy/manifests/workload-rbac.yaml)
		{"zero-replicas-no-pdb", "operator:\n  replicas: 0\n  podDisruptionBudget:\n    enabled: false\n",
			[]string{"Deployment"}, []string{"PodDisruptionBudget"}, false, nil, nil},
		{"no-flowschema", "operator:\n  apiPriority:\n    enabled: false\n", []string{"Deployment"}, []string{"FlowSchema"}, false, nil, nil},
		{"runtime-extension", "operator:\n  capi:\n    enrol: true\n    runtimeExtension:\n      enabled: true\n      certSecret: vitals-extension-tls\n" +
			"      namespaceSelector: {matchLabels: {vitals.vitalsproject.io/enrol: \"true\"}}\n",
			[]string{"Deployment", "Service", "ExtensionConfig"}, nil, false,
			[]string{"--capi-enrol", "--runtime-extension-port=9443", "--runtime-extension-cert-dir=/etc/vitals/extension-tls"}, nil},
		{"enrol-health-alone", "operator:\n  capi:\n    enrol: true\n    enrolDeletionPolicy: Orphan\n", []string{"Deployment"}, nil, false,
			[]string{"--capi-enrol", "--capi-enrol-deletion-policy=Orphan"}, nil},
		{"secrets-named-namespaces", "operator:\n  secrets:\n    namespaces: [default, " + ns + "]\n",
			[]string{"Role", "RoleBinding"}, nil, false, nil, []string{"default"}},
		{"secrets-cluster-wide", "operator:\n  secrets:\n    clusterWide: true\n", []string{"ClusterRole"}, nil, false, nil, nil},
		// The monitoring.coreos.com kinds are not served by the test apiserver (no Prometheus Operator CRDs):
		// they are checked by chartCheckMonitoring, the rest by the dry run.
		// One kind of monitor at a time (both would scrape every target twice: the chart refuses it).
		{"monitoring", "agent:\n  enabled: true\nmetrics:\n  serviceMonitor: {enabled: true}\n" +
			"  prometheusRule: {enabled: true}\n  dashboard: {enabled: true}\n",
			[]string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "Service"}, []string{"PodMonitor"}, false, nil, []string{"default"}},
		{"monitoring-pods", "agent:\n  enabled: true\nmetrics:\n  podMonitor: {enabled: true}\n  prometheusRule: {enabled: true}\n",
			[]string{"PodMonitor", "PrometheusRule"}, []string{"ServiceMonitor"}, false, nil, []string{"default"}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			args := append([]string{"template", release, chartDir(), "--namespace", ns, "--include-crds"}, chartMonitoringAPIs...)
			if v.values != "" {
				f := filepath.Join(t.TempDir(), "values.yaml")
				if err := os.WriteFile(f, []byte(v.values), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-f", f)
			}
			objs := decodeAll(t, []byte(runHelm(t, helm, args...)))
			kinds := map[string]int{}
			for _, u := range objs {
				if _, hook := u.GetAnnotations()["helm.sh/hook"]; !hook { // helm test's objects exist only while it runs
					kinds[u.GetKind()]++
				}
			}
			for _, k := range v.wantKinds {
				if kinds[k] == 0 {
					t.Errorf("rendered no %s (kinds: %v)", k, kinds)
				}
			}
			for _, k := range v.wantAbsent {
				if kinds[k] != 0 {
					t.Errorf("rendered %d %s, want none", kinds[k], k)
				}
			}
			offline := 0
			for _, u := range objs {
				if u.GetKind() == "Deployment" && len(v.wantArgs) > 0 {
					containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
					c, _ := containers[0].(map[string]any)
					args, _, _ := unstructured.NestedStringSlice(c, "args")
					for _, a := range v.wantArgs {
						if !slices.Contains(args, a) {
							t.Errorf("operator args %v lack %s", args, a)
						}
					}
				}
				chartCheckObject(t, u, v.netAdmin)
				gvk := u.GroupVersionKind()
				if gvk.Group == "monitoring.coreos.com" {
					chartCheckMonitoring(t, u)
					offline++
					continue
				}
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Errorf("%s %s: %v", gvk.Kind, u.GetName(), err)
					continue
				}
				var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					if u.GetNamespace() == "" {
						u.SetNamespace(ns)
					}
					rbac := gvk.Group == "rbac.authorization.k8s.io" && slices.Contains(v.alsoIn, u.GetNamespace())
					if u.GetNamespace() != ns && !rbac {
						t.Errorf("%s %s rendered into namespace %q, want the release's %q", gvk.Kind, u.GetName(), u.GetNamespace(), ns)
					}
					ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
				}
				data, err := u.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				force := true
				_, err = ri.Patch(context.Background(), u.GetName(), "application/apply-patch+yaml", data,
					metav1.PatchOptions{FieldManager: "vitals-e2e-chart", DryRun: []string{metav1.DryRunAll},
						Force: &force, FieldValidation: metav1.FieldValidationStrict})
				if err != nil {
					t.Errorf("%s %s: %v", gvk.Kind, u.GetName(), err)
				}
			}
			t.Logf("%d objects passed a server-side dry run, %d monitoring objects checked offline: %v", len(objs)-offline, offline, kinds)
		})
	}
}

// chartCheckObject checks what the issue asks of the install: HTTP probes on the health endpoints, an operator
// without capabilities running as non-root, NET_ADMIN for the agent only when asked.
func chartCheckObject(t *testing.T, u *unstructured.Unstructured, netAdmin bool) {
	t.Helper()
	if u.GetKind() != "Deployment" && u.GetKind() != "DaemonSet" {
		return
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Errorf("%s %s has no containers", u.GetKind(), u.GetName())
		return
	}
	c, _ := containers[0].(map[string]any)
	if u.GetLabels()["app.kubernetes.io/component"] == "agent-canary" {
		chartCheckCanary(t, u, c)
		return
	}
	live, _, _ := unstructured.NestedString(c, "livenessProbe", "httpGet", "path")
	ready, _, _ := unstructured.NestedString(c, "readinessProbe", "httpGet", "path")
	// The operator serves /livez and /readyz; the agent keeps Kuryr's CNI health server paths.
	wantLive, wantReady := "/livez", "/readyz"
	if u.GetKind() == "DaemonSet" {
		wantLive, wantReady = "/alive", "/ready"
	}
	if live != wantLive || ready != wantReady {
		t.Errorf("%s %s probes: liveness %q readiness %q, want %s and %s", u.GetKind(), u.GetName(), live, ready, wantLive, wantReady)
	}
	caps, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "add")
	hasNetAdmin := false
	for _, cp := range caps {
		hasNetAdmin = hasNetAdmin || cp == "NET_ADMIN"
	}
	if u.GetKind() == "DaemonSet" && hasNetAdmin != netAdmin {
		t.Errorf("DaemonSet %s adds capabilities %v, want NET_ADMIN: %v", u.GetName(), caps, netAdmin)
	}
	if u.GetKind() == "Deployment" {
		if len(caps) != 0 {
			t.Errorf("operator adds capabilities %v", caps)
		}
		nonRoot, found, _ := unstructured.NestedBool(u.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot")
		if cNonRoot, cFound, _ := unstructured.NestedBool(c, "securityContext", "runAsNonRoot"); cFound {
			nonRoot, found = cNonRoot, true
		}
		if !found || !nonRoot {
			t.Errorf("operator Deployment does not set runAsNonRoot: true")
		}
	}
}

// chartCheckCanary: the pod network canary runs on the pod network, without a token, capabilities or root,
// probed on its TCP port, and mounts from the host only the directory of the agent's canary socket.
func chartCheckCanary(t *testing.T, u *unstructured.Unstructured, c map[string]any) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	if hn, _, _ := unstructured.NestedBool(spec, "hostNetwork"); hn {
		t.Errorf("canary %s is on the host network: it must be on the pod network", u.GetName())
	}
	if mount, found, _ := unstructured.NestedBool(spec, "automountServiceAccountToken"); !found || mount {
		t.Errorf("canary %s mounts a service account token", u.GetName())
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if port, _, _ := unstructured.NestedString(c, probe, "tcpSocket", "port"); port != "probe" {
			t.Errorf("canary %s %s: want tcpSocket on port probe, got %v", u.GetName(), probe, c[probe])
		}
	}
	if caps, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "add"); len(caps) > 0 {
		t.Errorf("canary %s adds capabilities %v", u.GetName(), caps)
	}
	if nonRoot, _, _ := unstructured.NestedBool(c, "securityContext", "runAsNonRoot"); !nonRoot {
		t.Errorf("canary %s may run as root", u.GetName())
	}
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range vols {
		vm, _ := v.(map[string]any)
		if p, found, _ := unstructured.NestedString(vm, "hostPath", "path"); found && p != "/run/vitals/canary" {
			t.Errorf("canary %s mounts the host's %s", u.GetName(), p)
		}
	}
}

// TestOperatorChartMatchesManifests: deploy/manifests/operator.yaml is hack/generate.sh's rendering of the
// chart's defaults (release vitals, namespace vitals-system) after a header and the Namespace object.
func TestOperatorChartMatchesManifests(t *testing.T) {
	helm := testenv.Helm(t)
	want := runHelm(t, helm, "template", "vitals", chartDir(), "--namespace", "vitals-system", "--skip-tests") // the plain manifests carry no helm test
	data, err := os.ReadFile(filepath.Join(opRepoRoot(), "deploy", "manifests", "operator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	i := strings.Index(got, "\n---\n# Source: ")
	if i < 0 {
		t.Fatalf("deploy/manifests/operator.yaml holds no helm template output; run hack/generate.sh")
	}
	if got[i+1:] != want {
		t.Errorf("deploy/manifests/operator.yaml differs from helm template of the chart's defaults; run hack/generate.sh")
	}
	// The prefix: a header and the Namespace, nothing else.
	objs := decodeAll(t, []byte(got[:i]))
	if len(objs) != 1 || objs[0].GetKind() != "Namespace" || objs[0].GetName() != "vitals-system" {
		t.Errorf("deploy/manifests/operator.yaml: before the chart's rendering, want only the Namespace vitals-system, got %d objects", len(objs))
	}
}

// TestOperatorChartRemediationValues: the remediation values reach the operator's flags, and a budget of
// 0 stays 0 (no actions), never the default.
func TestOperatorChartRemediationValues(t *testing.T) {
	helm := testenv.Helm(t)
	args := func(values string) []string {
		t.Helper()
		cmd := []string{"template", "vitals", chartDir(), "--namespace", "vitals-system"}
		if values != "" {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd = append(cmd, "-f", f)
		}
		for _, u := range decodeAll(t, []byte(runHelm(t, helm, cmd...))) {
			if u.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c, _ := containers[0].(map[string]any)
			a, _, _ := unstructured.NestedStringSlice(c, "args")
			return a
		}
		t.Fatal("no Deployment rendered")
		return nil
	}
	tests := []struct {
		name, values string
		want         []string
	}{
		{"defaults", "", []string{"--routegc-budget=10", "--remediation-budget=100", "--remediation-window=1h",
			"--remediation-storm-cooldown=10m", "--remediation-paused=false", "--dry-run=false", "--pause-configmap=vitals-remediation"}},
		{"zero means none", "operator:\n  routegc:\n    budget: 0\n  remediation:\n    budget: 0\n    stormCooldown: 0s\n",
			[]string{"--routegc-budget=0", "--remediation-budget=0", "--remediation-storm-cooldown=0s"}},
		{"paused dry run", "operator:\n  remediation:\n    paused: true\n    dryRun: true\n    window: 30m\n    pauseConfigMap: hold\n",
			[]string{"--remediation-paused=true", "--dry-run=true", "--remediation-window=30m", "--pause-configmap=hold", "--remediation-budget=100"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(args(tc.values), " ")
			for _, w := range tc.want {
				if !strings.Contains(" "+got+" ", " "+w+" ") {
					t.Errorf("operator args %q lack %s", got, w)
				}
			}
		})
	}
	// A negative budget is refused by helm itself (values.schema.json).
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte("operator:\n  remediation:\n    budget: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := helmCmd(t, helm, "template", "vitals", chartDir(), "-f", f).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "/operator/remediation/budget") {
		t.Errorf("helm template with budget -1: err %v, output %s; want a refusal", err, out)
	}
}

// chartTestPEM stands for a private CA's certificate in chart values (the chart does not parse it).
const chartTestPEM = `-----BEGIN CERTIFICATE-----
MIIBdzCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjAZMRcwFQYDVQQDEw52aXRhbHMg
dGVzdCBDQTAeFw0yNjExMjMxMzAwMDBaFw0yNjExMjMxNTAwMDBa
-----END CERTIFICATE-----
`

// TestOperatorChartCABundle: the chart's CA bundle (inline, or an existing ConfigMap) is mounted where
// OS_CACERT points, and nothing of it is rendered when unset.
func TestOperatorChartCABundle(t *testing.T) {
	helm := testenv.Helm(t)
	render := func(values string) (deploy *unstructured.Unstructured, configMaps map[string]*unstructured.Unstructured) {
		t.Helper()
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		configMaps = map[string]*unstructured.Unstructured{}
		for _, u := range decodeAll(t, []byte(runHelm(t, helm, "template", "vitals", chartDir(), "--namespace", "vitals-system", "-f", f))) {
			switch u.GetKind() {
			case "Deployment":
				deploy = u
			case "ConfigMap":
				configMaps[u.GetName()] = u
			}
		}
		if deploy == nil {
			t.Fatal("no Deployment rendered")
		}
		return deploy, configMaps
	}
	for _, tc := range []struct {
		name, values string
		configMap    string // the ConfigMap mounted ("": no CA bundle)
		key          string
		rendered     bool // the chart renders that ConfigMap
	}{
		{"unset", "operator:\n  cloudsSecret: os-creds\n", "", "", false},
		{"inline", "operator:\n  caBundle:\n    pem: |\n      " + strings.ReplaceAll(strings.TrimSpace(chartTestPEM), "\n", "\n      ") + "\n",
			"vitals-operator-ca", "ca.crt", true},
		{"existing ConfigMap", "operator:\n  caBundle:\n    configMap: corp-ca\n    key: bundle.pem\n", "corp-ca", "bundle.pem", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deploy, cms := render(tc.values)
			spec, _, _ := unstructured.NestedMap(deploy.Object, "spec", "template", "spec")
			containers, _, _ := unstructured.NestedSlice(spec, "containers")
			c, _ := containers[0].(map[string]any)
			env, _, _ := unstructured.NestedSlice(c, "env")
			cacert := ""
			for _, e := range env {
				if m, _ := e.(map[string]any); m["name"] == "OS_CACERT" {
					cacert, _ = m["value"].(string)
				}
			}
			mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
			mountPath := ""
			for _, m := range mounts {
				if mm, _ := m.(map[string]any); mm["name"] == "ca-bundle" {
					mountPath, _ = mm["mountPath"].(string)
				}
			}
			volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
			var vol map[string]any
			for _, v := range volumes {
				if vm, _ := v.(map[string]any); vm["name"] == "ca-bundle" {
					vol = vm
				}
			}
			if tc.configMap == "" {
				if cacert != "" || mountPath != "" || vol != nil || cms["vitals-operator-ca"] != nil {
					t.Fatalf("CA bundle rendered without being asked for: OS_CACERT %q mount %q volume %v", cacert, mountPath, vol)
				}
				return
			}
			name, _, _ := unstructured.NestedString(vol, "configMap", "name")
			items, _, _ := unstructured.NestedSlice(vol, "configMap", "items")
			if name != tc.configMap || len(items) != 1 {
				t.Fatalf("ca-bundle volume %v, want ConfigMap %s with one item", vol, tc.configMap)
			}
			item, _ := items[0].(map[string]any)
			if item["key"] != tc.key || mountPath+"/"+item["path"].(string) != cacert {
				t.Errorf("OS_CACERT %q, mount %q, item %v: OS_CACERT must be the mounted key %s", cacert, mountPath, item, tc.key)
			}
			cm := cms[tc.configMap]
			if tc.rendered != (cm != nil) {
				t.Fatalf("ConfigMap %s rendered: %v, want %v", tc.configMap, cm != nil, tc.rendered)
			}
			if cm != nil {
				if data, _, _ := unstructured.NestedString(cm.Object, "data", tc.key); data != chartTestPEM {
					t.Errorf("ConfigMap %s %s = %q, want the PEM of the values", tc.configMap, tc.key, data)
				}
			}
		})
	}
}

package e2e

// helm install, upgrade and uninstall of the chart against the real kube-apiserver (the shared one runs no
// kubelet and no controller-manager: the rollout is seen in the Deployment's pod template and generation,
// which a Deployment controller turns into a new ReplicaSet). The install asks for the Prometheus
// Operator's objects on a cluster without its CRDs: the capabilities guard skips them (the NOTES say so)
// instead of failing the install; an upgrade that changes the operator's configuration or CA bundle
// changes the pod template's checksum annotations (the pods roll), one that changes nothing leaves the
// Deployment's generation alone; uninstall leaves nothing of the release in any namespace or at cluster
// scope (roles, bindings, the FlowSchema, the agent's Role in "default", Helm's release Secrets). The CRD
// stays, as Helm keeps crds/ (docs/upgrade.md).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

func TestChartInstallUpgradeUninstall(t *testing.T) {
	parallel(t)
	helm := testenv.Helm(t)
	cfg, c, ns := opKube(t)
	kubeconfig := testenv.KubeconfigPath(t)
	release := "vi" + opRandHex(3)
	dir := testenv.ShortDir(t, "install") // helm splits -f at commas
	values := func(name, body string) string {
		f := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	base := "agent:\n  enabled: true\noperator:\n  secrets:\n    namespaces: [default]\nmetrics:\n  serviceMonitor: {enabled: true}\n  prometheusRule: {enabled: true}\n"
	helmIn := func(args ...string) string {
		t.Helper()
		return runHelm(t, helm, append(args, "--kubeconfig", kubeconfig, "--namespace", ns)...)
	}
	deployment := func() *appsv1.Deployment {
		t.Helper()
		var d appsv1.Deployment
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: release + "-operator"}, &d); err != nil {
			t.Fatalf("the release's Deployment: %v", err)
		}
		return &d
	}
	t.Cleanup(func() {
		_, _ = helmCmd(t, helm, "uninstall", release, "--kubeconfig", kubeconfig, "--namespace", ns).CombinedOutput()
	})

	out := helmIn("install", release, chartDir(), "-f", values("v1", base+"operator:\n  config: |\n    [neutron]\n    timeout = 30\n"))
	if !strings.Contains(out, "ServiceMonitor skipped") || !strings.Contains(out, "PrometheusRule skipped") || !strings.Contains(out, "Install them, then helm upgrade") {
		t.Errorf("helm install on a cluster without the Prometheus Operator's CRDs: the NOTES do not say the monitoring objects were skipped:\n%s", out)
	}
	d1 := deployment()
	sum1 := d1.Spec.Template.Annotations["checksum/config"]
	if sum1 == "" {
		t.Fatalf("the Deployment's pod template has no checksum/config: %v", d1.Spec.Template.Annotations)
	}

	// The same values again: nothing to roll.
	helmIn("upgrade", release, chartDir(), "-f", values("v1", base+"operator:\n  config: |\n    [neutron]\n    timeout = 30\n"))
	if d := deployment(); d.Generation != d1.Generation || d.Spec.Template.Annotations["checksum/config"] != sum1 {
		t.Errorf("an upgrade with the same values changed the Deployment: generation %d -> %d", d1.Generation, d.Generation)
	}

	// A changed configuration: a new pod template, a new generation.
	helmIn("upgrade", release, chartDir(), "-f", values("v2", base+"operator:\n  config: |\n    [neutron]\n    timeout = 60\n"))
	d2 := deployment()
	if sum2 := d2.Spec.Template.Annotations["checksum/config"]; sum2 == "" || sum2 == sum1 || d2.Generation <= d1.Generation {
		t.Errorf("an upgrade with a changed config: checksum %q -> %q, generation %d -> %d; want a new pod template", sum1, sum2, d1.Generation, d2.Generation)
	}
	raw, err := dynamicGet(t, cfg, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, release+"-operator")
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := raw["data"].(map[string]any); data == nil || !strings.Contains(fmt.Sprint(data["operator.conf"]), "timeout = 60") {
		t.Errorf("the operator's ConfigMap after the upgrade: %v", raw["data"])
	}

	// A CA bundle: the pods roll again.
	pem := "operator:\n  config: |\n    [neutron]\n    timeout = 60\n  caBundle:\n    pem: |\n      " + strings.ReplaceAll(strings.TrimSpace(chartTestPEM), "\n", "\n      ") + "\n"
	helmIn("upgrade", release, chartDir(), "-f", values("v3", base+pem))
	d3 := deployment()
	if d3.Spec.Template.Annotations["checksum/ca-bundle"] == "" || d3.Generation <= d2.Generation {
		t.Errorf("an upgrade adding a CA bundle: annotations %v, generation %d -> %d", d3.Spec.Template.Annotations, d2.Generation, d3.Generation)
	}
	if hist := helmIn("history", release); strings.Count(hist, "\n") < 5 {
		t.Errorf("helm history after an install and three upgrades:\n%s", hist)
	}

	before := releaseObjects(t, cfg, release)
	if len(before) < 10 || !slices.ContainsFunc(before, func(s string) bool { return strings.HasPrefix(s, "Role default/") }) ||
		!slices.ContainsFunc(before, func(s string) bool { return strings.HasPrefix(s, "FlowSchema ") }) {
		t.Fatalf("the release's objects before uninstall: %v; want its Role in default and its FlowSchema among them", before)
	}
	helmIn("uninstall", release)
	if left := releaseObjects(t, cfg, release); len(left) != 0 {
		t.Errorf("helm uninstall left %d objects of the release: %v", len(left), left)
	}
	t.Logf("install, 3 upgrades (generation %d -> %d -> %d -> %d), uninstall: %d objects, none left", d1.Generation, d1.Generation, d2.Generation, d3.Generation, len(before))
}

func dynamicGet(t *testing.T, cfg *rest.Config, gvr schema.GroupVersionResource, ns, name string) (map[string]any, error) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	u, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return u.Object, nil
}

// releaseObjects lists every object of every kind the API server serves (namespaced kinds in all
// namespaces) that carries the release's instance label, and Helm's release Secrets ("Kind ns/name").
func releaseObjects(t *testing.T, cfg *rest.Config, release string) []string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, sel := range []string{"app.kubernetes.io/instance=" + release, "owner=helm,name=" + release} {
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil {
				continue
			}
			for _, r := range l.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || r.Kind == "Event" {
					continue
				}
				if strings.HasPrefix(sel, "owner=") && r.Kind != "Secret" {
					continue
				}
				ul, err := dyn.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
				if err != nil {
					continue // a kind this client may not list, or an aggregated API that is down
				}
				for _, u := range ul.Items {
					where := u.GetName()
					if u.GetNamespace() != "" {
						where = u.GetNamespace() + "/" + where
					}
					found = append(found, r.Kind+" "+where)
				}
			}
		}
	}
	slices.Sort(found)
	return slices.Compact(found)
}

package node

// A release installed on real nodes, upgraded and uninstalled as docs/upgrade.md says: make release's
// artifacts (hack/release.sh, this host's platform only), its operator image imported into every node's
// containerd (as docs/getting-started.md's ctr alternative does; nothing is pulled), the chart package
// installed with its defaults but the pull policy, so that the pods run the release's own image by the
// chart's default repository and appVersion. An upgrade with a changed operator configuration replaces
// every operator pod (checksum annotation); a VitalsCluster with deletionPolicy Deorbit gets the finalizer
// from the running operator; then the uninstall in the documented order (its policy set to Orphan, the
// VitalsCluster deleted, helm uninstall, the namespaces deleted) leaves nothing hanging: the VitalsCluster
// and both namespaces are gone (the node cluster runs the namespace controller), and no cluster-scoped object
// of the release is left.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

var vitalsClusters = schema.GroupVersionResource{Group: "vitals.vitalsproject.io", Version: "v1alpha1", Resource: "vitalsclusters"}

func TestReleaseOnNodes(t *testing.T) {
	c := testenv.Node(t)
	cs := c.Client(t)
	cfg := c.Config(t)
	testenv.InstallCRD(t, cfg) // Helm installs a chart's CRD only where there is none: this checkout's
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	out := t.TempDir()
	version := "0.0.0-nodes.r" + randHex(3) // a letter first: SemVer refuses a numeric identifier with a leading zero
	rel := exec.Command(filepath.Join(repoRoot(), "hack", "release.sh"))
	rel.Dir = repoRoot()
	rel.Env = append(os.Environ(), "OUT="+out, "VERSION="+version, "PLATFORMS=linux/"+runtime.GOARCH)
	start := time.Now()
	if b, err := rel.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh: %v\n%s", err, b)
	}
	t.Logf("hack/release.sh (linux/%s): %s", runtime.GOARCH, time.Since(start).Round(time.Second))
	c.ImportImage(t, filepath.Join(out, "vitals-operator-"+version+".oci.tar"))
	t.Cleanup(func() { _ = c.RemoveImage("docker.io/vitalsproject/vitals:" + version) })

	ns := namespace(t, cs)
	clusters := namespace(t, cs)
	release := "vr" + randHex(3)
	values := func(timeout int) string {
		f := filepath.Join(t.TempDir(), "values.yaml")
		body := fmt.Sprintf("image: {pullPolicy: Never}\noperator:\n  secrets:\n    namespaces: [%s]\n  config: |\n    [neutron]\n    timeout = %d\n", clusters, timeout)
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	chart := filepath.Join(out, "vitals-"+version+".tgz")
	helm(t, c, "install", release, chart, "--namespace", ns, "-f", values(30))
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			helm(t, c, "uninstall", release, "--namespace", ns, "--wait", "--timeout", "2m")
		}
	})
	operatorPods := func(ctx context.Context) (map[types.UID]bool, int, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=operator"})
		if err != nil {
			return nil, 0, err
		}
		uids, ready := map[types.UID]bool{}, 0
		for _, p := range pods.Items {
			uids[p.UID] = true
			if podReady(&p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		return uids, ready, nil
	}
	var before map[types.UID]bool
	waitFor(t, 4*time.Minute, "the release's operator Ready", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, release+"-operator", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var ready int
		before, ready, err = operatorPods(ctx)
		return err == nil && deploymentReady(d) && ready == len(before) && ready > 0, err
	})
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, release+"-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "vitalsproject/vitals:"+version {
		t.Errorf("the chart's default image %q, want vitalsproject/vitals:%s (its repository and appVersion)", img, version)
	}
	t.Logf("installed: %d operator pods Ready %s after the install", len(before), time.Since(start).Round(time.Second))

	// An upgrade that changes the operator's configuration replaces every operator pod.
	helm(t, c, "upgrade", release, chart, "--namespace", ns, "-f", values(60))
	upgraded := time.Now()
	waitFor(t, 4*time.Minute, "every operator pod replaced and Ready after the upgrade", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, release+"-operator", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now, ready, err := operatorPods(ctx)
		if err != nil || !deploymentReady(d) || d.Status.ObservedGeneration < d.Generation || ready != len(now) {
			return false, err
		}
		for uid := range now {
			if before[uid] {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("upgrade with a changed config: every operator pod replaced in %s", time.Since(upgraded).Round(time.Second))

	// A VitalsCluster whose deletion would tear its cluster down: the running operator holds it.
	vc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "vitals.vitalsproject.io/v1alpha1", "kind": "VitalsCluster",
		"metadata": map[string]any{"name": "prod-eu", "namespace": clusters},
		"spec": map[string]any{
			"deletionPolicy": "Deorbit",
			"openstack": map[string]any{"credentialsSecretRef": map[string]any{"name": "prod-eu-clouds"},
				"routerID": "9f1c1d7a-0000-4000-8000-000000000001", "subnetID": "9f1c1d7a-0000-4000-8000-000000000002"},
			"podCIDRs": []any{"10.100.0.0/16"},
		},
	}}
	vcs := dyn.Resource(vitalsClusters).Namespace(clusters)
	if _, err := vcs.Create(ctx, vc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the operator's finalizer on the Deorbit VitalsCluster", func(ctx context.Context) (bool, error) {
		u, err := vcs.Get(ctx, "prod-eu", metav1.GetOptions{})
		return err == nil && strings.Contains(strings.Join(u.GetFinalizers(), " "), "vitals.vitalsproject.io/deorbit"), err
	})

	// Uninstall as docs/upgrade.md says: keep the cloud's resources (Orphan), delete the VitalsCluster and
	// wait, uninstall the release, delete the namespaces.
	if _, err := vcs.Patch(ctx, "prod-eu", types.MergePatchType, []byte(`{"spec":{"deletionPolicy":"Orphan"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vcs.Delete(ctx, "prod-eu", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the VitalsCluster gone", func(ctx context.Context) (bool, error) {
		_, err := vcs.Get(ctx, "prod-eu", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	helm(t, c, "uninstall", release, "--namespace", ns, "--wait", "--timeout", "2m")
	uninstalled = true
	gone := time.Now()
	for _, n := range []string{clusters, ns} {
		if err := cs.CoreV1().Namespaces().Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 3*time.Minute, "both namespaces gone, none stuck Terminating", func(ctx context.Context) (bool, error) {
		for _, n := range []string{clusters, ns} {
			if _, err := cs.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
	t.Logf("uninstalled: both namespaces gone %s after their deletion", time.Since(gone).Round(time.Second))
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	crs, err := cs.RbacV1().ClusterRoles().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(crs.Items) + len(crbs.Items); n != 0 {
		t.Errorf("helm uninstall left %d ClusterRoles and %d ClusterRoleBindings of the release", len(crs.Items), len(crbs.Items))
	}
}

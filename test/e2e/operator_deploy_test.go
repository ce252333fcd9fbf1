package e2e

// The install artefacts against the real kube-apiserver: the CRD's validation refuses bad input with
// a clear message, the plain manifests pass a server-side dry run, and the chart's templates parse.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

func TestOperatorCRDValidation(t *testing.T) {
	cfg := testenv.Kube(t)
	opInstallCRD(t, cfg)
	c := opClient(t, cfg)
	ns := opNamespace(t, c)
	good := func() *v1alpha1.VitalsCluster {
		return &v1alpha1.VitalsCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "v-"},
			Spec: v1alpha1.ClusterSpec{
				OpenStack: v1alpha1.OpenStackSpec{RouterID: "r1"},
				PodCIDRs:  []v1alpha1.CIDR{"198.19.0.0/16"},
			},
		}
	}
	if err := c.Create(context.Background(), good()); err != nil {
		t.Fatalf("a valid Cluster was refused: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*v1alpha1.VitalsCluster)
		want   []string // substrings of the API server's message
	}{
		{"pod CIDR not a CIDR", func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.19.0.0/33"} },
			[]string{"spec.podCIDRs[0]", "must be a network in CIDR notation"}},
		{"pod CIDR with host bits", func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.19.0.1/16"} },
			[]string{"spec.podCIDRs[0]", "no host bits set"}},
		{"second pod CIDR garbage", func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = append(c.Spec.PodCIDRs, "banana") },
			[]string{"spec.podCIDRs[1]", "must be a network in CIDR notation"}},
		{"no pod CIDR", func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = nil },
			[]string{"spec.podCIDRs"}},
		{"no router", func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.RouterID = "" },
			[]string{"spec.openstack.routerID"}},
		{"protected nexthop not an IP", func(c *v1alpha1.VitalsCluster) {
			c.Spec.Controllers.RouteGC.ProtectedRoutes = []v1alpha1.ProtectedRoute{{Destination: "198.19.1.0/24", NextHop: "10.0.0"}}
		}, []string{"nexthop", "must be an IP address"}},
		{"interval too short", func(c *v1alpha1.VitalsCluster) {
			c.Spec.Controllers.RouteGC.Interval = &metav1.Duration{Duration: 100 * 1e6}
		}, []string{"interval", "at least 1s"}},
		{"negative budget", func(c *v1alpha1.VitalsCluster) {
			b := int32(-1)
			c.Spec.Controllers.RouteGC.Budget = &b
		}, []string{"budget"}},
		{"unknown address source", func(c *v1alpha1.VitalsCluster) {
			c.Spec.Controllers.RouteGC.AddressSources = []v1alpha1.AddressSource{"dns"}
		}, []string{"addressSources", "ports", "servers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := good()
			tc.mutate(cl)
			err := c.Create(context.Background(), cl)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422 Invalid, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err.Error(), w)
				}
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestOperatorManifestsServerSideDryRun applies deploy/crds and deploy/manifests with DryRun=All:
// the API server validates every object (RBAC rules, Deployment probes, the CRD's schema and CEL
// rules) without storing anything.
func TestOperatorManifestsServerSideDryRun(t *testing.T) {
	cfg := testenv.Kube(t)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opInstallCRD(t, cfg) // the example Cluster needs the CRD served
	// The manifests' namespace, swapped for this test's own so the namespaced objects can be checked.
	ns := opNamespace(t, opClient(t, cfg))
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	root := opRepoRoot()
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "crds", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join(root, "deploy", "manifests", "*.yaml"))
	files = append(files, more...)
	if len(files) < 3 {
		t.Fatalf("found only %v", files)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.ReplaceAll(data, []byte("vitals-system"), []byte(ns))
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			gvk := u.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %s: %v", filepath.Base(f), gvk, err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ns := u.GetNamespace()
				if ns == "" {
					ns = "default"
				}
				ri = dyn.Resource(m.Resource).Namespace(ns)
			}
			data, _ := u.MarshalJSON()
			force := true
			_, err = ri.Patch(context.Background(), u.GetName(), "application/apply-patch+yaml", data,
				metav1.PatchOptions{FieldManager: "vitals-e2e", DryRun: []string{metav1.DryRunAll}, Force: &force})
			if err != nil {
				t.Errorf("%s: %s %s: %v", filepath.Base(f), gvk.Kind, u.GetName(), err)
				continue
			}
			n++
		}
	}
	t.Logf("%d objects passed a server-side dry run", n)
	if n < 8 {
		t.Errorf("only %d objects checked", n)
	}
}

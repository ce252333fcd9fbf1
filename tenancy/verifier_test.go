package tenancy_test

// The Verifier against the simulator (two projects, a user in each) and controller-runtime's fake
// client for the Secrets. test/e2e runs the same refusals against the real Keystone and Neutron.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

type simFixture struct {
	sim      *cloudsim.Sim
	url      string
	a, b     *cloudsim.SeededCluster
	kube     client.WithWatch
	connects atomic.Int32
	operator tenancy.Connection
}

func cloudsYAML(authURL, user, password, project string) string {
	return fmt.Sprintf(`clouds:
  openstack:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: Default
      project_domain_name: Default
`, authURL, user, password, project)
}

func newSimFixture(t *testing.T) *simFixture {
	t.Helper()
	sim, err := cloudsim.New(cloudsim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim.Handler())
	t.Cleanup(ts.Close)
	f := &simFixture{sim: sim, url: ts.URL + "/v3"}
	if f.a, err = sim.SeedCluster(cloudsim.ClusterSeed{Project: "team-a", Name: "a", Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	if f.b, err = sim.SeedCluster(cloudsim.ClusterSeed{Project: "team-b", Name: "b", Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct{ name, project string }{{"alice", f.a.ProjectID}, {"bob", f.b.ProjectID}} {
		if _, err := sim.CreateUser(u.name, u.name+"-password", false, u.project); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sim.CreateUser("operator", "operator-password", true, f.b.ProjectID); err != nil {
		t.Fatal(err)
	}
	secret := func(ns, name string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), ResourceVersion: "1"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	f.kube = fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.VitalsCluster{}, tenancy.IndexRouter, tenancy.RouterIndex).WithObjects(
		secret("team-a", "creds", map[string]string{
			"clouds.yaml": cloudsYAML(f.url, "alice", "alice-password", "team-a"),
			"ca.crt":      "-----BEGIN CERTIFICATE-----\nc2VjcmV0LWNhLWNvbnRlbnRz\n-----END CERTIFICATE-----\n",
			"token":       "s3cr3t-Zq9: [unclosed",
			"wrong":       cloudsYAML(f.url, "alice", "not-her-password", "team-a"),
		}),
		secret("team-a", "loopback", map[string]string{"clouds.yaml": cloudsYAML("http://127.0.0.1:1/v3", "alice", "alice-password", "team-a")}),
	).Build()
	op, err := openstack.Connect(context.Background(), openstack.Config{Auth: openstack.Auth{Options: authOptions(f.url, "operator", "team-b")}})
	if err != nil {
		t.Fatal(err)
	}
	f.operator = op
	return f
}

func (f *simFixture) verifier(mutate func(*tenancy.Options)) *tenancy.Verifier {
	o := tenancy.Options{
		Secrets:         f.kube,
		Clusters:        f.kube,
		TrustedAuthURLs: []string{f.url},
		Connect: func(ctx context.Context, a openstack.Auth, tr http.RoundTripper) (tenancy.Connection, error) {
			f.connects.Add(1)
			return openstack.Connect(ctx, openstack.Config{Auth: a, Transport: tr, HTTPTimeout: 10 * time.Second})
		},
	}
	if mutate != nil {
		mutate(&o)
	}
	return tenancy.NewVerifier(o)
}

func (f *simFixture) cluster(mutate func(*v1alpha1.VitalsCluster)) *v1alpha1.VitalsCluster {
	c := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "c1", UID: "c1"},
		Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{
				CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
				RouterID:             f.a.RouterID, NetworkID: f.a.NetworkID, SubnetID: f.a.SubnetID, SecurityGroupName: "default",
			},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestVerifier(t *testing.T) {
	f := newSimFixture(t)
	operatorCreds := func(o *tenancy.Options) {
		o.Operator = func(context.Context) (tenancy.Connection, error) { return f.operator, nil }
	}
	noSecret := func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef = nil }
	tests := []struct {
		name    string
		opts    func(*tenancy.Options)
		cluster func(*v1alpha1.VitalsCluster)
		reason  string // "" : verified
		project string
	}{
		{name: "own resources", reason: "", project: "a"},
		{name: "another project's router", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.RouterID = f.b.RouterID }, reason: tenancy.ReasonForeignResource},
		{name: "a router that does not exist", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.RouterID = "00000000-0000-0000-0000-000000000000" }, reason: tenancy.ReasonForeignResource},
		{name: "another project's network", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.NetworkID = f.b.NetworkID }, reason: tenancy.ReasonForeignResource},
		{name: "another project's subnet", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.SubnetID = f.b.SubnetID }, reason: tenancy.ReasonForeignResource},
		{name: "a security group the project lacks", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.SecurityGroupName = "nodes" }, reason: tenancy.ReasonForeignResource},
		{name: "another project ID", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.ProjectID = f.b.ProjectID }, reason: tenancy.ReasonForeignProject},
		{name: "a pod CIDR too wide", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = []v1alpha1.CIDR{"0.0.0.0/0"} }, reason: tenancy.ReasonPodCIDRTooWide},
		{name: "no Secret, no operator credentials", cluster: noSecret, reason: tenancy.ReasonMissingCredentials},
		{name: "no Secret, untrusted namespace", opts: operatorCreds, cluster: noSecret, reason: tenancy.ReasonUntrustedNamespace},
		{name: "no Secret, trusted namespace", cluster: func(c *v1alpha1.VitalsCluster) {
			noSecret(c)
			c.Spec.OpenStack = v1alpha1.OpenStackSpec{RouterID: f.b.RouterID}
		}, opts: func(o *tenancy.Options) { operatorCreds(o); o.TrustedNamespaces = []string{"team-a"} }, project: "b"},
		{name: "a Secret that does not exist", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Name = "nope" }, reason: tenancy.ReasonMissingCredentials},
		{name: "a key the Secret lacks", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Key = "nope" }, reason: tenancy.ReasonInvalidCredentials},
		{name: "a key that is not YAML", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Key = "token" }, reason: tenancy.ReasonInvalidCredentials},
		{name: "a key that is a certificate", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Key = "ca.crt" }, reason: tenancy.ReasonInvalidCredentials},
		{name: "a wrong password", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Key = "wrong" }, reason: tenancy.ReasonInvalidCredentials},
		{name: "a cloud the clouds.yaml lacks", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.Cloud = "prod" }, reason: tenancy.ReasonInvalidCredentials},
		{name: "an auth_url on loopback", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Name = "loopback" }, reason: tenancy.ReasonInvalidCredentials},
		{name: "the simulator, not trusted", opts: func(o *tenancy.Options) { o.TrustedAuthURLs = nil }, reason: tenancy.ReasonInvalidCredentials},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := f.verifier(tc.opts)
			c := f.cluster(tc.cluster)
			scope, err := v.Resolve(t.Context(), c)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				want := map[string]string{"a": f.a.ProjectID, "b": f.b.ProjectID}[tc.project]
				if scope.ProjectID != want || scope.Router.ID != c.Spec.OpenStack.RouterID {
					t.Fatalf("scope project %s router %s; want %s, %s", scope.ProjectID, scope.Router.ID, want, c.Spec.OpenStack.RouterID)
				}
				return
			}
			var r *tenancy.Refusal
			if !errors.As(err, &r) || r.Reason != tc.reason {
				t.Fatalf("Resolve = %v, %v; want refusal %s", scope, err, tc.reason)
			}
			for _, s := range []string{"s3cr3t", "c2VjcmV0", "alice-password", "not-her-password", "alice"} {
				if strings.Contains(r.Message, s) {
					t.Fatalf("the refusal holds the Secret's contents (%q): %s", s, r.Message)
				}
			}
		})
	}
}

func TestVerifierScopeStaysInTheProject(t *testing.T) {
	f := newSimFixture(t)
	v := f.verifier(nil)
	scope, err := v.Resolve(t.Context(), f.cluster(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var r *tenancy.Refusal
	if _, err := scope.Cloud.SetRoutes(ctx, f.b.RouterID, nil, 1); !errors.As(err, &r) || r.Reason != tenancy.ReasonForeignResource {
		t.Errorf("SetRoutes on another router: %v", err)
	}
	if _, err := scope.Cloud.RemoveRoutes(ctx, f.b.RouterID, []openstack.Route{{Destination: "198.19.0.0/24", NextHop: "10.180.0.10"}}); !errors.As(err, &r) {
		t.Errorf("RemoveRoutes on another router: %v", err)
	}
	if _, err := scope.Cloud.ListServers(ctx, openstack.ListOpts{ProjectID: f.b.ProjectID}); !errors.As(err, &r) || r.Reason != tenancy.ReasonForeignProject {
		t.Errorf("ListServers of another project: %v", err)
	}
	if err := scope.Cloud.DeleteServer(ctx, f.b.Nodes[0].ID); err == nil {
		t.Errorf("DeleteServer of another project's server: no error")
	}
	if _, _, ok := f.sim.ServerStatus(f.b.Nodes[0].ID); !ok {
		t.Fatal("another project's server was deleted")
	}
	servers, err := scope.Cloud.ListServers(ctx, openstack.ListOpts{})
	if err != nil || len(servers) != 1 || servers[0].ProjectID != f.a.ProjectID {
		t.Errorf("ListServers = %+v, %v; want the project's one server", servers, err)
	}
	if _, err := scope.Cloud.Quotas(ctx, openstack.ServiceNetworking, f.b.ProjectID); !errors.As(err, &r) || r.Reason != tenancy.ReasonForeignProject {
		t.Errorf("Quotas of another project: %v", err)
	}
	if qs, err := scope.Cloud.Quotas(ctx, openstack.ServiceNetworking, ""); err != nil || len(qs) == 0 {
		t.Errorf("Quotas of the project = %+v, %v; want its network quotas", qs, err)
	}
	if routes, _, _ := f.sim.Router(f.b.RouterID); len(routes) != len(f.b.LiveRoutes) {
		t.Errorf("another project's router changed: %v", routes)
	}

	// Another project's port and floating IP (made by the operator, an admin, in project b).
	nc, err := f.operator.(*openstack.Cloud).Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	ext := externalNetwork(t, nc)
	port, err := ports.Create(ctx, nc, ports.CreateOpts{NetworkID: f.b.NetworkID, Name: "octavia-lb-x", DeviceID: "lb-x", DeviceOwner: "Octavia", ProjectID: f.b.ProjectID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	fip, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: ext, ProjectID: f.b.ProjectID,
		Description: "Floating IP for Kubernetes external service app/web from cluster a"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := scope.Cloud.DeletePort(ctx, port.ID); err == nil {
		t.Errorf("DeletePort of another project's port: no error")
	}
	if err := scope.Cloud.DeleteFloatingIP(ctx, fip.ID); err == nil {
		t.Errorf("DeleteFloatingIP of another project's floating IP: no error")
	}
	if _, err := scope.Cloud.ListFloatingIPs(ctx, openstack.ListOpts{ProjectID: f.b.ProjectID}); !errors.As(err, &r) || r.Reason != tenancy.ReasonForeignProject {
		t.Errorf("ListFloatingIPs of another project: %v", err)
	}
	if fips, err := scope.Cloud.ListFloatingIPs(ctx, openstack.ListOpts{}); err != nil || len(fips) != 0 {
		t.Errorf("ListFloatingIPs = %+v, %v; want none of the project", fips, err)
	}
	if _, err := ports.Get(ctx, nc, port.ID).Extract(); err != nil {
		t.Errorf("another project's port: %v", err)
	}
	if _, err := floatingips.Get(ctx, nc, fip.ID).Extract(); err != nil {
		t.Errorf("another project's floating IP: %v", err)
	}
	// The operator's own scope in project b never deletes Neutron's own ports (a router's interface).
	opScope, err := tenancy.ScopeOf(ctx, f.operator, v1alpha1.OpenStackSpec{}, "operator credentials")
	if err != nil {
		t.Fatal(err)
	}
	iface, err := ports.List(nc, ports.ListOpts{DeviceID: f.b.RouterID, DeviceOwner: "network:router_interface"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ifaces, _ := ports.ExtractPorts(iface)
	if len(ifaces) == 0 {
		t.Fatal("router b has no interface port")
	}
	if err := opScope.Cloud.DeletePort(ctx, ifaces[0].ID); !errors.As(err, &r) || r.Reason != tenancy.ReasonForeignResource {
		t.Errorf("DeletePort of a router interface: %v, want a refusal", err)
	}
}

func TestVerifierCachesPerSecretVersion(t *testing.T) {
	f := newSimFixture(t)
	v := f.verifier(nil)
	c := f.cluster(nil)
	ctx := t.Context()
	for range 3 {
		if _, err := v.Resolve(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.connects.Load(); n != 1 {
		t.Fatalf("connects: %d, want 1 for one Secret version", n)
	}
	var sec corev1.Secret
	if err := f.kube.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "creds"}, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Labels = map[string]string{"rotated": "yes"}
	if err := f.kube.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Resolve(ctx, c); err != nil {
		t.Fatal(err)
	}
	if n := f.connects.Load(); n != 2 {
		t.Fatalf("connects: %d, want 2 after the Secret changed", n)
	}
	// A second cluster on the same Secret shares the connection; it stays while one of them is left.
	c2 := f.cluster(func(c *v1alpha1.VitalsCluster) { c.Name, c.UID = "c2", "c2" })
	if _, err := v.Resolve(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if n := f.connects.Load(); n != 2 {
		t.Fatalf("connects: %d, want 2 (shared)", n)
	}
	v.Forget(types.NamespacedName{Namespace: "team-a", Name: "c1"})
	if v.Cached() != 1 {
		t.Fatalf("cached %d after one of two clusters went, want 1", v.Cached())
	}
	v.Forget(types.NamespacedName{Namespace: "team-a", Name: "c2"})
	if v.Cached() != 0 {
		t.Fatalf("cached %d after both clusters went, want 0", v.Cached())
	}
}

// TestVerifierSecretMaxAge: with SecretMaxAge, a Secret read less than that long ago is not read again
// (its connection serves, even when the Secret changed meanwhile); once older, the next resolution reads
// it and connects with the new version; a cluster that turns to another Secret reads that one at once.
func TestVerifierSecretMaxAge(t *testing.T) {
	f := newSimFixture(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	var gets atomic.Int32
	secrets := interceptor.NewClient(f.kube, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Secret); ok {
			gets.Add(1)
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	v := f.verifier(func(o *tenancy.Options) { o.Secrets, o.SecretMaxAge, o.Clock = secrets, time.Minute, clk })
	c := f.cluster(nil)
	ctx := t.Context()
	resolve := func(step string, c *v1alpha1.VitalsCluster, wantGets, wantConnects int32) {
		t.Helper()
		if _, err := v.Resolve(ctx, c); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if g, n := gets.Load(), f.connects.Load(); g != wantGets || n != wantConnects {
			t.Fatalf("%s: %d Secret reads and %d connects, want %d and %d", step, g, n, wantGets, wantConnects)
		}
	}
	resolve("first", c, 1, 1)
	clk.Step(30 * time.Second)
	resolve("read 30s ago", c, 1, 1)
	var sec corev1.Secret
	if err := f.kube.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "creds"}, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Labels = map[string]string{"rotated": "yes"}
	if err := f.kube.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	resolve("rotated, read 30s ago", c, 1, 1)
	clk.Step(30 * time.Second)
	resolve("rotated, read a minute ago", c, 2, 2)
	resolve("read now", c, 2, 2)
	other := f.cluster(func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Key = "wrong" })
	if _, err := v.Resolve(ctx, other); err == nil {
		t.Fatal("another key of the Secret: resolved, want refused (not the cached connection)")
	}
	if g := gets.Load(); g != 3 {
		t.Fatalf("another key: %d Secret reads, want 3", g)
	}
}

// TestVerifierOverlapReadsTheOtherClusters: the younger of two clusters on one router whose pod CIDRs
// overlap is refused, whether the overlap rule lists every cluster or those of the router only (the
// operator's index); an older overlapping cluster on another router does not count.
func TestVerifierOverlapReadsTheOtherClusters(t *testing.T) {
	for _, byRouter := range []bool{false, true} {
		t.Run(fmt.Sprintf("by router %v", byRouter), func(t *testing.T) {
			f := newSimFixture(t)
			v := f.verifier(func(o *tenancy.Options) { o.ClustersByRouter = byRouter })
			ctx := t.Context()
			old := f.cluster(func(c *v1alpha1.VitalsCluster) {
				c.Name = "old"
				c.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
				c.Status.ProjectID = f.a.ProjectID // proven by an earlier resolution
			})
			other := f.cluster(func(c *v1alpha1.VitalsCluster) {
				c.Name, c.UID = "other-router", "other-router"
				c.CreationTimestamp = old.CreationTimestamp
				c.Spec.OpenStack.RouterID = f.b.RouterID
				c.Status.ProjectID = f.a.ProjectID
			})
			for _, c := range []*v1alpha1.VitalsCluster{old, other} {
				if err := f.kube.Create(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			young := f.cluster(func(c *v1alpha1.VitalsCluster) {
				c.Name, c.UID = "young", "young"
				c.CreationTimestamp = metav1.NewTime(old.CreationTimestamp.Add(time.Hour))
				c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.19.4.0/24"}
			})
			var r *tenancy.Refusal
			if _, err := v.Resolve(ctx, young); !errors.As(err, &r) || r.Reason != tenancy.ReasonPodCIDROverlap || !strings.Contains(r.Message, "team-a/old ") {
				t.Fatalf("the younger cluster: %v, want PodCIDROverlap with team-a/old", err)
			}
			if _, err := v.Resolve(ctx, old); err != nil {
				t.Fatalf("the older cluster: %v, want verified", err)
			}
		})
	}
}

// externalNetwork creates an external network with a subnet (an admin's nc), for floating IPs.
func externalNetwork(t *testing.T, nc *gophercloud.ServiceClient) string {
	t.Helper()
	yes := true
	ext, err := networks.Create(t.Context(), nc, external.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: "public"}, External: &yes}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := subnets.Create(t.Context(), nc, subnets.CreateOpts{NetworkID: ext.ID, CIDR: "203.0.113.0/24", IPVersion: gophercloud.IPv4}).Extract(); err != nil {
		t.Fatal(err)
	}
	return ext.ID
}

func authOptions(url, user, project string) gophercloud.AuthOptions {
	return gophercloud.AuthOptions{IdentityEndpoint: url, Username: user, Password: user + "-password", DomainName: "Default", TenantName: project}
}

// TestVerifierClusterBeingDeleted: a cluster being deleted that was proven in its project before keeps its
// scope when its owner's teardown has deleted its router, network, subnet or security group (they are listed
// as gone, and a router gone takes every router write with it); a live cluster, one never proven, or one
// whose resources are another project's is refused as before.
func TestVerifierClusterBeingDeleted(t *testing.T) {
	f := newSimFixture(t)
	const missing = "00000000-0000-0000-0000-000000000000"
	// deleted: proven at generation 3, deleted (generation 4)
	deleted := func(c *v1alpha1.VitalsCluster) {
		c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		c.Finalizers = []string{v1alpha1.FinalizerDeorbit}
		c.Generation = 4
		c.Status.ProjectID = f.a.ProjectID
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionCloudVerified, Status: metav1.ConditionTrue, ObservedGeneration: 3}}
	}
	tests := []struct {
		name    string
		cluster func(*v1alpha1.VitalsCluster)
		reason  string   // "": verified
		gone    []string // what the scope lists as gone
	}{
		{name: "deleted, nothing gone", cluster: deleted},
		{name: "deleted, router gone", cluster: func(c *v1alpha1.VitalsCluster) { deleted(c); c.Spec.OpenStack.RouterID = missing },
			gone: []string{"router " + missing}},
		{name: "deleted, network, subnet and security group gone", cluster: func(c *v1alpha1.VitalsCluster) {
			deleted(c)
			c.Spec.OpenStack.NetworkID, c.Spec.OpenStack.SubnetID, c.Spec.OpenStack.SecurityGroupName = missing, missing, "nodes"
		}, gone: []string{"network " + missing, "subnet " + missing, `security group "nodes"`}},
		{name: "live, router gone", cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.RouterID = missing }, reason: tenancy.ReasonForeignResource},
		{name: "deleted, never proven, router gone", cluster: func(c *v1alpha1.VitalsCluster) {
			deleted(c)
			c.Status.ProjectID, c.Spec.OpenStack.RouterID = "", missing
		}, reason: tenancy.ReasonForeignResource},
		{name: "deleted, proven in another project, router gone", cluster: func(c *v1alpha1.VitalsCluster) {
			deleted(c)
			c.Status.ProjectID, c.Spec.OpenStack.RouterID = f.b.ProjectID, missing
		}, reason: tenancy.ReasonForeignResource},
		{name: "deleted, its spec changed since the proof to another project's subnet", cluster: func(c *v1alpha1.VitalsCluster) {
			deleted(c)
			c.Spec.OpenStack.SubnetID, c.Generation = f.b.SubnetID, 5
		}, reason: tenancy.ReasonForeignResource},
		{name: "deleted, its last proof refused, router gone", cluster: func(c *v1alpha1.VitalsCluster) {
			deleted(c)
			c.Status.Conditions[0].Status, c.Spec.OpenStack.RouterID = metav1.ConditionFalse, missing
		}, reason: tenancy.ReasonForeignResource},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := f.cluster(tc.cluster)
			scope, err := f.verifier(nil).Resolve(t.Context(), c)
			if tc.reason != "" {
				var r *tenancy.Refusal
				if !errors.As(err, &r) || r.Reason != tc.reason {
					t.Fatalf("Resolve = %+v, %v; want refusal %s", scope, err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if fmt.Sprint(scope.Gone) != fmt.Sprint(tc.gone) || scope.ProjectID != f.a.ProjectID {
				t.Fatalf("scope project %s gone %q; want %s, %q", scope.ProjectID, scope.Gone, f.a.ProjectID, tc.gone)
			}
			routerGone := c.Spec.OpenStack.RouterID == missing
			if routerGone != (scope.Router == nil) {
				t.Fatalf("scope router %+v with the router gone %v", scope.Router, routerGone)
			}
			// deorbit removes only the routes via the subnet's CIDR
			if subnetGone := c.Spec.OpenStack.SubnetID == missing; subnetGone != (scope.Subnet == nil) ||
				!subnetGone && (scope.Subnet.ID != c.Spec.OpenStack.SubnetID || scope.Subnet.CIDR == "") {
				t.Fatalf("scope subnet %+v with the subnet gone %v", scope.Subnet, subnetGone)
			}
			_, err = scope.Cloud.SetRoutes(t.Context(), c.Spec.OpenStack.RouterID, nil, 1)
			var r *tenancy.Refusal
			if refused := errors.As(err, &r) && r.Reason == tenancy.ReasonForeignResource; refused != routerGone {
				t.Fatalf("a route write on router %s: %v; want refused only when the router is gone", c.Spec.OpenStack.RouterID, err)
			}
		})
	}
}

// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package deorbit

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// TestInterlockServers: the servers' interlock on the simulator's Nova and Neutron. Only the servers the cluster
// was seen to have (status.deorbit.seen.servers) prove anything: never seen with one, nothing is proven; a selector
// with a typo (it matches none of the live cluster's servers) proves nothing while the recorded servers are up;
// the recorded servers (or any the selector matches now) up hold the teardown, and being deleted or gone let it
// go; a server of another network or without the metadata never counts.
func TestInterlockServers(t *testing.T) {
	ctx := context.Background()
	sim, connect := simTenant(t, 28)
	mine, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "p", Name: "mine", Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	other, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "p", Name: "other", Nodes: 1, NodeCIDR: "10.181.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	cloud := connect(mine.ProjectID)
	clk := clocktesting.NewFakeClock(time.Now())
	r := &Reconciler{d: &pass.Deps{Clock: clk}}
	var mineIDs, otherIDs []string
	for _, n := range mine.Nodes {
		mineIDs = append(mineIDs, n.ID)
	}
	for _, n := range other.Nodes {
		otherIDs = append(otherIDs, n.ID)
	}
	cluster := func(network string, meta map[string]string, seen []string) *v1alpha1.VitalsCluster {
		c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine", UID: "u1"}}
		c.Spec.OpenStack.NetworkID = network
		c.Spec.Controllers.Flight.Servers.Metadata = meta
		if seen != nil {
			c.Status.Deorbit = &v1alpha1.DeorbitStatus{Seen: &v1alpha1.DeorbitSeen{Servers: seen}}
		}
		return c
	}
	check := func(c *v1alpha1.VitalsCluster, want bool, contains string) {
		t.Helper()
		r.proven.forget(c.UID)
		got, why := r.serversGone(ctx, c, cloud, mine.ProjectID)
		if got != want || !strings.Contains(why, contains) {
			t.Errorf("serversGone = %v %q, want %v and %q", got, why, want, contains)
		}
	}
	byNet := cluster(mine.NetworkID, nil, mineIDs)
	byMeta := cluster("", map[string]string{"kubernikus:cluster": "mine"}, mineIDs)
	typo := cluster("", map[string]string{"kubernikus:cluster": "mien"}, mineIDs)
	check(cluster("", nil, nil), false, "cannot be told apart")
	check(cluster("", map[string]string{"kubernikus:cluster": "mien"}, nil), false, "was ever seen matching its selector")
	check(cluster(mine.NetworkID, nil, nil), false, "was ever seen matching its selector")
	check(byNet, false, "2 of its servers (recorded while it lived, or servers with a port on network "+mine.NetworkID+") are up")
	check(byMeta, false, "2 of its servers (recorded while it lived, or servers with the metadata")
	check(typo, false, "2 of its servers (recorded while it lived")
	if got, why := r.serversGone(ctx, byNet, nil, mine.ProjectID); got || !strings.Contains(why, "not verified") {
		t.Errorf("without a cloud: %v %q", got, why)
	}
	// What the selector matches now counts too.
	m, err := matchServers(ctx, byNet, cloud, mine.ProjectID)
	if err != nil || len(m.up) != 2 || len(m.going) != 0 {
		t.Errorf("matchServers = %+v %v, want the 2 servers up", m, err)
	}
	if m, err := matchServers(ctx, typo, cloud, mine.ProjectID); err != nil || len(m.up)+len(m.going) != 0 {
		t.Errorf("matchServers of the typo = %+v %v, want none", m, err)
	}
	// The other cluster's server stays up throughout: it never holds this one's teardown.
	for _, n := range mine.Nodes {
		if err := cloud.DeleteServer(ctx, n.ID); err != nil {
			t.Fatal(err)
		}
	}
	check(byNet, true, "none of the 2 servers the cluster was seen to have")
	check(byMeta, true, "none of the 2 servers")
	check(typo, true, "none of the 2 servers")
	check(cluster(other.NetworkID, nil, otherIDs), false, "1 of its servers")
	check(cluster(mine.NetworkID, nil, otherIDs), false, "1 of its servers") // recorded, though no longer matched

	// A proof serves a while, then the project is listed again.
	r.proven.forget(byNet.UID)
	if got, _ := r.serversGone(ctx, byNet, cloud, mine.ProjectID); !got {
		t.Fatal("no proof")
	}
	if msg, ok := r.proven.get(byNet.UID, clk.Now().Add(serversProofMaxAge-time.Second)); !ok || msg == "" {
		t.Error("the proof did not serve within its age")
	}
	if _, ok := r.proven.get(byNet.UID, clk.Now().Add(serversProofMaxAge)); ok {
		t.Error("the proof served past its age")
	}
}

// TestInterlockRecheck: the fence of each write re-checks the policy and a confirmation on the live cluster.
func TestInterlockRecheck(t *testing.T) {
	live := func(policy v1alpha1.DeletionPolicy, confirm string) *v1alpha1.VitalsCluster {
		c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{UID: "u1", Annotations: map[string]string{}}}
		c.Spec.DeletionPolicy = policy
		if confirm != "" {
			c.Annotations[v1alpha1.AnnotationConfirmDeorbit] = confirm
		}
		return c
	}
	for _, tc := range []struct {
		name string
		kind string
		live *v1alpha1.VitalsCluster
		want string // "": the write goes
	}{
		{"confirmed, still", proofConfirmed, live(v1alpha1.DeletionPolicyDeorbit, "u1"), ""},
		{"confirmation withdrawn", proofConfirmed, live(v1alpha1.DeletionPolicyDeorbit, ""), "was withdrawn"},
		{"confirmation for another uid", proofConfirmed, live(v1alpha1.DeletionPolicyDeorbit, "u2"), "was withdrawn"},
		{"set to Orphan", proofOwner, live(v1alpha1.DeletionPolicyOrphan, ""), "deletionPolicy is Orphan now"},
		{"owner deleting: no annotation needed", proofOwner, live(v1alpha1.DeletionPolicyDeorbit, ""), ""},
		{"servers gone: no annotation needed", proofServers, live(v1alpha1.DeletionPolicyDeorbit, ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := proof{kind: tc.kind}.recheck("u1")(tc.live)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("recheck = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInterlockMovedAway: a VitalsCluster clusterctl move deletes from the old management cluster (annotation
// clusterctl.cluster.x-k8s.io/delete-for-move) proves nothing, even with a confirmation naming its uid: the cluster
// lives on in the new management cluster. Without the annotation the confirmation holds.
func TestInterlockMovedAway(t *testing.T) {
	r := &Reconciler{d: &pass.Deps{Clock: clocktesting.NewFakeClock(time.Now())}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		holds       bool
		contains    string
	}{
		{"confirmed", map[string]string{v1alpha1.AnnotationConfirmDeorbit: "u1"}, true, "confirmed"},
		{"confirmed, then moved", map[string]string{v1alpha1.AnnotationConfirmDeorbit: "u1", clusterapi.DeleteForMoveAnnotation: ""}, false, "clusterctl move"},
		{"moved", map[string]string{clusterapi.DeleteForMoveAnnotation: ""}, false, "lives on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1", Annotations: tc.annotations}}
			p := r.interlock(context.Background(), c, nil, "")
			if p.holds() != tc.holds || !strings.Contains(strings.Join(p.why, "; "), tc.contains) {
				t.Errorf("interlock: holds %v (%v), want %v and %q", p.holds(), p.why, tc.holds, tc.contains)
			}
		})
	}
}

// TestInterlockOwnerLives, against the Cluster API management cluster's kube-apiserver and the simulator's Nova:
// a VitalsCluster owned by a Cluster that lives (not being deleted) is not proven going by its servers being
// gone (a cluster scaled to zero, or whose control plane is not up yet, still has volumes and load balancers);
// a Cluster re-created under the same name proves nothing either; once its Cluster is gone, the servers'
// proof counts again.
func TestInterlockOwnerLives(t *testing.T) {
	ctx := context.Background()
	env := testenv.CAPI(t)
	cfg := env.Config(t)
	testenv.InstallCRD(t, cfg)
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, clusterv1.AddToScheme, infrav1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, cfg, "interlock")
	// A Cluster on an infrastructure that never comes: Cluster API keeps it, nothing tears it down.
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lives"},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.SchemeGroupVersion.Group, Kind: "OpenStackCluster", Name: "lives"}}}
	if err := c.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	sim, connect := simTenant(t, 29)
	seeded, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "p", Name: "lives", Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	cloud := connect(seeded.ProjectID)
	if err := cloud.DeleteServer(ctx, seeded.Nodes[0].ID); err != nil { // seen while it lived, gone now
		t.Fatal(err)
	}
	vcl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lives", UID: "u-lives",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cl.Name, UID: cl.UID, Controller: ptr.To(true)}}}}
	vcl.Spec.OpenStack.NetworkID = seeded.NetworkID // no server on it any more: the servers' proof would hold
	vcl.Status.Deorbit = &v1alpha1.DeorbitStatus{Seen: &v1alpha1.DeorbitSeen{Servers: []string{seeded.Nodes[0].ID}}}
	r := &Reconciler{d: &pass.Deps{Clock: clocktesting.NewFakeClock(time.Now()), APIReader: c}}
	if p := r.interlock(ctx, vcl, cloud, seeded.ProjectID); p.holds() || !strings.Contains(strings.Join(p.why, "; "), "proves nothing") {
		t.Fatalf("owner lives: holds %v (%v), want no proof, the servers not counted", p.holds(), p.why)
	}
	deleteCluster := func(cl *clusterv1.Cluster) {
		t.Helper()
		if err := c.Delete(ctx, cl); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			err := c.Get(ctx, client.ObjectKeyFromObject(cl), &clusterv1.Cluster{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Cluster is not gone after 2 minutes: %v", err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	deleteCluster(cl)
	// Gone, and a step saw that very Cluster being deleted: Cluster API removed it once torn down, mid-deorbit.
	vcl.Status.Deorbit.OwnerDeletionSeen = ownerDeletionSeen(vcl, nil, time.Now())
	if got := vcl.Status.Deorbit.OwnerDeletionSeen; got == nil || got.UID != cl.UID || got.Name != cl.Name {
		t.Fatalf("ownerDeletionSeen = %+v, want the Cluster %s (uid %s)", got, cl.Name, cl.UID)
	}
	if p := r.interlock(ctx, vcl, cloud, seeded.ProjectID); !p.holds() || p.kind != proofOwner || !strings.Contains(strings.Join(p.why, "; "), "was seen being deleted") {
		t.Fatalf("owner seen deleted, then gone: holds %v kind %q (%v), want the owner's proof", p.holds(), p.kind, p.why)
	}
	vcl.Status.Deorbit.OwnerDeletionSeen = &v1alpha1.OwnerDeletionRecord{Name: cl.Name, UID: "another-uid"}
	if p := r.interlock(ctx, vcl, cloud, seeded.ProjectID); p.kind == proofOwner {
		t.Fatalf("a record of another Cluster's deletion: kind %q (%v), want no owner's proof", p.kind, p.why)
	}
	vcl.Status.Deorbit.OwnerDeletionSeen = nil
	// Re-created under the same name (another UID): the new Cluster's resources carry the same names, and its
	// servers may not be up yet; it proves nothing of this one's going.
	again := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cl.Name}, Spec: cl.Spec}
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	r.proven.forget(vcl.UID)
	if p := r.interlock(ctx, vcl, cloud, seeded.ProjectID); p.holds() || !strings.Contains(strings.Join(p.why, "; "), "re-created Cluster proves nothing") {
		t.Fatalf("owner re-created: holds %v (%v), want no proof, the re-created Cluster named", p.holds(), p.why)
	}
	deleteCluster(again)
	r.proven.forget(vcl.UID)
	if p := r.interlock(ctx, vcl, cloud, seeded.ProjectID); !p.holds() || p.kind != proofServers {
		t.Fatalf("owner gone: holds %v kind %q (%v), want the servers' proof", p.holds(), p.kind, p.why)
	}
}

// simTenant starts the simulator (seeded for repeatable IDs) and returns it with connect, which makes a user
// "tenant" in a project and connects as it (the project named "p", as the tests seed it).
func simTenant(t *testing.T, seed uint64) (*cloudsim.Sim, func(projectID string) *openstack.Cloud) {
	t.Helper()
	sim, err := cloudsim.New(cloudsim.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim.Handler())
	t.Cleanup(ts.Close)
	return sim, func(projectID string) *openstack.Cloud {
		t.Helper()
		if _, err := sim.CreateUser("tenant", "tenant-password", false, projectID); err != nil {
			t.Fatal(err)
		}
		auth := openstack.Auth{}
		auth.Options.IdentityEndpoint, auth.Options.Username, auth.Options.Password = ts.URL+"/v3", "tenant", "tenant-password"
		auth.Options.DomainName, auth.Options.TenantName = "Default", "p"
		cloud, err := openstack.Connect(context.Background(), openstack.Config{Auth: auth, QPS: -1, HTTPTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return cloud
	}
}

package e2e

// cloudheal's live debris repair against the real services: Octavia (no-op drivers), Neutron behind the
// fault proxy (the floating IPs' and ports' deletes counted there), Nova, and the private kube-apiserver as
// the workload cluster. One pass at a time with the fixture's fake clock.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/cloudheal"
	"github.com/vitalsproject/vitals/internal/test/contract"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// ccmLB creates, as the cloud controller manager and Octavia would, a load balancer named for Service
// ns/svc on the cluster's subnet, on a VIP port named and owned as Octavia names and owns it; it returns the
// load balancer's and the VIP port's IDs.
func (f *chFixture) ccmLB(lc *gophercloud.ServiceClient, svc string) (string, string) {
	f.t.Helper()
	ctx := context.Background()
	p, err := ports.Create(ctx, f.nc, ports.CreateOpts{NetworkID: f.net.Network, Name: "vip", DeviceOwner: ccm.OctaviaOwner,
		FixedIPs: []ports.IP{{SubnetID: f.net.Subnet}}}).Extract()
	if err != nil {
		f.t.Fatalf("create VIP port: %v", err)
	}
	f.t.Cleanup(func() { _ = ports.Delete(context.Background(), f.nc, p.ID).ExtractErr() })
	lb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: ccm.LoadBalancerName(f.name, f.ns, svc),
		VipPortID: p.ID, VipSubnetID: f.net.Subnet, VipAddress: p.FixedIPs[0].IPAddress}).Extract()
	if err != nil {
		f.t.Fatalf("create load balancer for %s: %v", svc, err)
	}
	f.t.Cleanup(func() {
		_ = loadbalancers.Delete(context.Background(), lc, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	})
	name, device := ccm.VIPPortName(lb.ID), "lb-"+lb.ID
	if _, err := ports.Update(ctx, f.nc, p.ID, ports.UpdateOpts{Name: &name, DeviceID: &device}).Extract(); err != nil {
		f.t.Fatal(err)
	}
	opEventually(f.t, 2*time.Minute, "load balancer "+lb.ID+" ACTIVE", func() (bool, string) {
		got, err := loadbalancers.Get(ctx, lc, lb.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return got.ProvisioningStatus == "ACTIVE", got.ProvisioningStatus
	})
	return lb.ID, p.ID
}

// lbGone reports whether Octavia no longer shows the load balancer (404, or DELETED).
func lbGone(t *testing.T, lc *gophercloud.ServiceClient, id string) bool {
	t.Helper()
	got, err := loadbalancers.Get(context.Background(), lc, id).Extract()
	if openstack.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatalf("read load balancer %s: %v", id, err)
	}
	return got.ProvisioningStatus == "DELETED"
}

// TestOperatorCloudHealDebris: a Service deleted while its load balancer was left behind (the cloud
// controller manager stopped) gets its load balancer, its VIP port and its floating IP removed once, after
// the proof age and in dry-run first not at all; a port bound to a server that does not exist goes too. A
// user's floating IP, an unattached floating IP of the cloud controller manager's and a live Service's load
// balancer are never touched.
func TestOperatorCloudHealDebris(t *testing.T) {
	f := newCHFixture(t)
	ctx := context.Background()
	admin := testenv.OpenStack(t)
	ext := contract.ExternalNetwork(t, openstack.Config{Auth: openstack.Auth{Source: "test", Options: admin.AuthOptions()}}, "192.0.2.0/24")
	// floating IPs on the cluster's ports need its router on the external network
	if _, err := routers.Update(ctx, f.nc, f.net.Router, routers.UpdateOpts{GatewayInfo: &routers.GatewayInfo{NetworkID: ext}}).Extract(); err != nil {
		t.Fatalf("set the router's gateway: %v", err)
	}
	t.Cleanup(func() {
		_, _ = routers.Update(context.Background(), f.nc, f.net.Router, routers.UpdateOpts{GatewayInfo: &routers.GatewayInfo{}}).Extract()
	})
	lc, err := f.cloud.Client(openstack.ServiceLoadBalancer)
	if err != nil {
		t.Fatal(err)
	}
	fip := func(desc, port string) string {
		t.Helper()
		x, err := floatingips.Create(ctx, f.nc, floatingips.CreateOpts{FloatingNetworkID: ext, PortID: port, Description: desc}).Extract()
		if err != nil {
			t.Fatalf("create floating IP %q: %v", desc, err)
		}
		t.Cleanup(func() { _ = floatingips.Delete(context.Background(), f.nc, x.ID).ExtractErr() })
		return x.ID
	}
	// the Service "gone" never exists in the workload cluster: its load balancer was left behind
	lbGoneID, vipGone := f.ccmLB(lc, "gone")
	fipGone := fip(ccm.FloatingIPDescription(f.name, f.ns, "gone"), vipGone)
	fipKept := fip(ccm.FloatingIPDescription(f.name, f.ns, "old"), "") // keep-floatingip: reported, never deleted
	fipUser := fip("my own address", "")
	f.lbService("web")
	lbLive, vipLive := f.ccmLB(lc, "web")
	orphan, err := ports.Create(ctx, f.nc, ports.CreateOpts{NetworkID: f.net.Network, Name: "vitals-e2e-orphan", DeviceOwner: "compute:nova",
		DeviceID: string(uuid.NewUUID())}).Extract()
	if err != nil {
		t.Fatalf("create a port of a server that does not exist: %v", err)
	}
	t.Cleanup(func() { _ = ports.Delete(context.Background(), f.nc, orphan.ID).ExtractErr() })
	count := map[string]string{"fip-gone": "/v2.0/floatingips/" + fipGone, "fip-kept": "/v2.0/floatingips/" + fipKept,
		"fip-user": "/v2.0/floatingips/" + fipUser, "vip-gone": "/v2.0/ports/" + vipGone, "vip-live": "/v2.0/ports/" + vipLive,
		"orphan": "/v2.0/ports/" + orphan.ID}
	for name, path := range count {
		if err := f.neutron.Add(faultproxy.Rule{Name: name, Method: "DELETE", Path: path, Fault: faultproxy.Pass()}); err != nil {
			t.Fatal(err)
		}
	}
	deletes := func() string {
		var out []string
		for name := range count {
			if n := f.neutron.Matched(name); n > 0 {
				out = append(out, fmt.Sprintf("%s=%d", name, n))
			}
		}
		return strings.Join(out, " ")
	}

	// on, in dry-run first, with a short proof age (the fixture's clock steps a minute a pass)
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		t.Fatal(err)
	}
	on := true
	cl.Spec.Controllers.CloudHeal.DryRun = true
	cl.Spec.Controllers.CloudHeal.Repairs.Debris = v1alpha1.DebrisRepair{Enabled: &on, ProofAge: &metav1.Duration{Duration: 10 * time.Minute}}
	if err := f.c.Update(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	debrisOf := func(cl *v1alpha1.VitalsCluster) map[string]v1alpha1.Debris {
		out := map[string]v1alpha1.Debris{}
		if cl.Status.CloudHeal != nil {
			for _, d := range cl.Status.CloudHeal.Debris {
				out[d.ID] = d
			}
		}
		return out
	}
	got := f.pass()
	cd := condition(got, v1alpha1.ConditionLiveDebrisCleared)
	if cd.Status != metav1.ConditionFalse || cd.Reason != cloudheal.ReasonDebrisFound {
		t.Fatalf("first pass: %s = %s/%s (%s), want False/DebrisFound", v1alpha1.ConditionLiveDebrisCleared, cd.Status, cd.Reason, cd.Message)
	}
	seen := debrisOf(got)
	for _, id := range []string{lbGoneID, vipGone, fipGone, fipKept, orphan.ID} {
		if _, ok := seen[id]; !ok {
			t.Fatalf("first pass: %s not seen as debris: %+v (%s)", id, seen, cd.Message)
		}
	}
	for _, id := range []string{lbLive, vipLive, fipUser} {
		if _, ok := seen[id]; ok {
			t.Fatalf("first pass: %s seen as debris: %+v", id, seen[id])
		}
	}
	if d := deletes(); d != "" || lbGone(t, lc, lbGoneID) {
		t.Fatalf("first pass deleted: %s", d)
	}
	// past the proof age, two sightings: proven, but dry-run deletes nothing
	f.clock.Step(10 * time.Minute)
	got = f.pass()
	if d := deletes(); d != "" || lbGone(t, lc, lbGoneID) {
		t.Fatalf("dry-run deleted: %s (%s)", d, condition(got, v1alpha1.ConditionLiveDebrisCleared).Message)
	}
	// dry-run off: removed, once
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		t.Fatal(err)
	}
	cl.Spec.Controllers.CloudHeal.DryRun = false
	if err := f.c.Update(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4 && f.neutron.Matched("vip-gone") == 0; i++ {
		got = f.pass()
	}
	cd = condition(got, v1alpha1.ConditionLiveDebrisCleared)
	for _, name := range []string{"fip-gone", "vip-gone", "orphan"} {
		if n := f.neutron.Matched(name); n != 1 {
			t.Fatalf("deletes of %s at the proxy: %d, want 1 (all: %s; condition %s/%s: %s)", name, n, deletes(), cd.Status, cd.Reason, cd.Message)
		}
	}
	if !lbGone(t, lc, lbGoneID) {
		t.Fatalf("the debris load balancer %s is still there (%s)", lbGoneID, cd.Message)
	}
	// more passes: nothing again, and never the user's, the kept or the live Service's
	f.pass()
	got = f.pass()
	for name, want := range map[string]int{"fip-gone": 1, "vip-gone": 1, "orphan": 1, "fip-kept": 0, "fip-user": 0, "vip-live": 0} {
		if n := f.neutron.Matched(name); n != want {
			t.Fatalf("deletes of %s at the proxy: %d, want %d", name, n, want)
		}
	}
	if lbGone(t, lc, lbLive) {
		t.Fatal("the live Service's load balancer is gone")
	}
	for _, id := range []string{fipUser, fipKept} {
		if _, err := floatingips.Get(ctx, f.nc, id).Extract(); err != nil {
			t.Fatalf("floating IP %s: %v", id, err)
		}
	}
	if st := got.Status.CloudHeal; st.DebrisRemovedTotal != 4 {
		t.Fatalf("debrisRemovedTotal = %d, want 4 (floating IP, load balancer, VIP port, orphan port)", st.DebrisRemovedTotal)
	}
	for kind, want := range map[v1alpha1.DebrisKind]float64{v1alpha1.DebrisFloatingIP: 1, v1alpha1.DebrisLoadBalancer: 1, v1alpha1.DebrisPort: 2} {
		if n := testutil.ToFloat64(f.m.DebrisRemoved.WithLabelValues(f.key.String(), string(kind))); n != want {
			t.Fatalf("vitals_cloudheal_debris_removed_total{kind=%s} = %v, want %v", kind, n, want)
		}
	}
	// what is left: the kept floating IP, reported
	left := debrisOf(got)
	if _, ok := left[fipKept]; !ok || len(left) != 1 {
		t.Fatalf("debris left: %+v, want only the kept floating IP %s", left, fipKept)
	}
	cd = condition(got, v1alpha1.ConditionLiveDebrisCleared)
	if cd.Reason != cloudheal.ReasonDebrisFound || !strings.Contains(cd.Message, "FloatingIP "+fipKept) || !strings.Contains(cd.Message, "never deleted") {
		t.Fatalf("the kept floating IP is not reported: %s/%s: %s", cd.Status, cd.Reason, cd.Message)
	}
	if n := testutil.ToFloat64(f.m.Debris.WithLabelValues(f.key.String(), string(v1alpha1.DebrisFloatingIP))); n != 1 {
		t.Fatalf("vitals_cloudheal_debris{kind=FloatingIP} = %v, want 1", n)
	}
}

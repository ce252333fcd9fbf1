package deorbit

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/internal/test/contract"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// The sweep against the real Neutron and Octavia of the test cloud, with the ports and floating IPs
// made as Octavia and the cloud controller manager make them, and what a member of the project (or
// of another) can make to look like them:
//   - the cluster's load balancer on its VIP port (Octavia's name, device and owner), with the cloud
//     controller manager's floating IP on it; Octavia's no-op driver leaves the port when the load
//     balancer goes, as an Octavia that failed to deallocate it would: the sweep deletes the floating
//     IP, the load balancer, then the port; an unassociated floating IP of the cluster goes too;
//   - never deleted: the cluster's description on a floating IP on a server's port (another cluster's
//     Service given the address); another cluster's description; the VIP port of another cluster's load
//     balancer; a port forged as the VIP port of a load balancer the cluster never had; the cluster's
//     description on a floating IP of another project.
func TestSweepNetworkRealNeutron(t *testing.T) {
	rc := newRealCloud(t)
	ctx := t.Context()
	cluster := randName("dn")
	cfg := openstack.Config{QPS: -1, Auth: openstack.Auth{Source: "test", Options: rc.env.AuthOptions()}}
	ext := contract.ExternalNetwork(t, cfg, "198.51.100.0/24")

	// The project's network, routed to the external network (floating IPs need it).
	n, err := networks.Create(ctx, rc.net, networks.CreateOpts{Name: cluster}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), rc.net, n.ID).ExtractErr() })
	sn, err := subnets.Create(ctx, rc.net, subnets.CreateOpts{NetworkID: n.ID, CIDR: "10.78.0.0/24", IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = subnets.Delete(context.Background(), rc.net, sn.ID).ExtractErr() })
	r, err := routers.Create(ctx, rc.net, routers.CreateOpts{Name: cluster, GatewayInfo: &routers.GatewayInfo{NetworkID: ext}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = routers.Delete(context.Background(), rc.net, r.ID).ExtractErr() })
	if _, err := routers.AddInterface(ctx, rc.net, r.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = routers.RemoveInterface(context.Background(), rc.net, r.ID, routers.RemoveInterfaceOpts{SubnetID: sn.ID}).Extract()
	})

	port := func(name, device, owner string) *ports.Port {
		t.Helper()
		p, err := ports.Create(ctx, rc.net, ports.CreateOpts{NetworkID: n.ID, Name: name, DeviceID: device, DeviceOwner: owner}).Extract()
		if err != nil {
			t.Fatalf("create port %s: %v", name, err)
		}
		t.Cleanup(func() { _ = ports.Delete(context.Background(), rc.net, p.ID).ExtractErr() })
		return p
	}
	fip := func(client *gophercloud.ServiceClient, desc, portID, project string) string {
		t.Helper()
		f, err := floatingips.Create(ctx, client, floatingips.CreateOpts{FloatingNetworkID: ext, PortID: portID, Description: desc, ProjectID: project}).Extract()
		if err != nil {
			t.Fatalf("create floating IP %q: %v", desc, err)
		}
		t.Cleanup(func() { _ = floatingips.Delete(context.Background(), client, f.ID).ExtractErr() })
		return f.ID
	}
	// A load balancer on a VIP port made as Octavia makes it: the port is named after the load
	// balancer once it has an ID.
	vipLB := func(lbName string) (lbID, portID string) {
		t.Helper()
		p := port("vip", "", ccm.OctaviaOwner)
		l, err := loadbalancers.Create(ctx, rc.lb, loadbalancers.CreateOpts{Name: lbName, VipPortID: p.ID, VipSubnetID: sn.ID, VipAddress: p.FixedIPs[0].IPAddress}).Extract()
		if err != nil {
			t.Fatalf("create load balancer %s: %v", lbName, err)
		}
		t.Cleanup(func() {
			_ = loadbalancers.Delete(context.Background(), rc.lb, l.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		})
		name, device := ccm.VIPPortName(l.ID), "lb-"+l.ID
		if _, err := ports.Update(ctx, rc.net, p.ID, ports.UpdateOpts{Name: &name, DeviceID: &device}).Extract(); err != nil {
			t.Fatal(err)
		}
		rc.await(t, "load balancer "+lbName, func() (string, error) {
			got, err := loadbalancers.Get(ctx, rc.lb, l.ID).Extract()
			if err != nil {
				return "", err
			}
			return got.ProvisioningStatus, nil
		}, "ACTIVE")
		return l.ID, p.ID
	}

	lbWeb, pWeb := vipLB(ccm.LoadBalancerName(cluster, "app", "web"))
	fWeb := fip(rc.net, ccm.FloatingIPDescription(cluster, "app", "web"), pWeb, "")
	fLoose := fip(rc.net, ccm.FloatingIPDescription(cluster, "app", "old"), "", "")

	server := port("node-1", randName("srv"), "compute:nova")
	fServer := fip(rc.net, ccm.FloatingIPDescription(cluster, "app", "reused"), server.ID, "")
	fOther := fip(rc.net, ccm.FloatingIPDescription(cluster+"x", "app", "web"), "", "")
	lbOther, pOther := vipLB(ccm.LoadBalancerName(cluster+"x", "app", "web"))
	pForged := port(ccm.VIPPortName("6d0b5e1c-0000-4000-8000-"+cluster[2:]+"0000"), "lb-6d0b5e1c-0000-4000-8000-"+cluster[2:]+"0000", ccm.OctaviaOwner)

	// Another project's floating IP with the cluster's description (made by the admin).
	ic, err := gcos.NewIdentityV3(rc.pc, rc.env.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	other, err := projects.Create(ctx, ic, projects.CreateOpts{Name: cluster + "-other", DomainID: "default"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = projects.Delete(context.Background(), ic, other.ID).ExtractErr() })
	fForeign := fip(rc.net, ccm.FloatingIPDescription(cluster, "app", "web"), "", other.ID)

	conn, err := openstack.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	scope, err := tenancy.ScopeOf(ctx, conn, v1alpha1.OpenStackSpec{}, "test credentials")
	if err != nil {
		t.Fatal(err)
	}
	a := &asker{}
	m := NewMetrics(nil)
	e := &Engine{Clock: clock.RealClock{}, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, Poll: time.Second, Workers: 4, Metrics: m}
	in := Input{Target: Target{Key: cluster, ClusterName: cluster}, SkipWorkload: "the test has no workload cluster", Cloud: scope.Cloud, Policy: a,
		Settings: Settings{GiveUpAfter: 2 * time.Minute, CloudWaitTimeout: time.Second, Budget: DefaultBudget}}
	st := &v1alpha1.DeorbitStatus{}
	var res Result
	for i := 0; i < 300 && !res.Release; i++ {
		res = e.Step(ctx, in, st)
		if !res.Release && !backoff.Sleep(ctx, clock.RealClock{}, time.Until(res.Next)) {
			t.Fatal("cancelled")
		}
	}
	if st.Phase != v1alpha1.DeorbitPhaseDone {
		t.Fatalf("phase %s, last error %q; resources %+v; debris %+v", st.Phase, st.LastError, st.Resources, st.Debris)
	}

	portThere := func(id string) bool {
		_, err := ports.Get(ctx, rc.net, id).Extract()
		if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("get port %s: %v", id, err)
		}
		return err == nil
	}
	fipThere := func(id string) bool {
		_, err := floatingips.Get(ctx, rc.net, id).Extract()
		if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("get floating IP %s: %v", id, err)
		}
		return err == nil
	}
	if portThere(pWeb) || fipThere(fWeb) || fipThere(fLoose) || rc.exists(t, v1alpha1.DeorbitLoadBalancer, lbWeb) {
		t.Errorf("the cluster's left: port %v, floating IPs %v %v, load balancer %v", portThere(pWeb), fipThere(fWeb), fipThere(fLoose),
			rc.exists(t, v1alpha1.DeorbitLoadBalancer, lbWeb))
	}
	for _, id := range []string{server.ID, pOther, pForged.ID} {
		if !portThere(id) {
			t.Errorf("port %s, not the cluster's, was deleted", id)
		}
	}
	for _, id := range []string{fServer, fOther, fForeign} {
		if !fipThere(id) {
			t.Errorf("floating IP %s, not the cluster's, was deleted", id)
		}
	}
	if !rc.exists(t, v1alpha1.DeorbitLoadBalancer, lbOther) {
		t.Errorf("another cluster's load balancer was deleted")
	}
	if s := state(st, v1alpha1.DeorbitFloatingIP, fServer); s != v1alpha1.DeorbitKept {
		t.Errorf("the floating IP on a server's port: state %s, want Kept", s)
	}
	for _, v := range []string{VerbDeletePort + " " + pWeb, VerbDeleteFloatingIP + " " + fWeb, VerbDeleteFloatingIP + " " + fLoose} {
		if a.asked[v] != 1 || a.done[v] != 1 {
			t.Errorf("%s: asked %d, done %d; want once each", v, a.asked[v], a.done[v])
		}
	}
	for typ, want := range map[string]float64{v1alpha1.DeorbitPort: 1, v1alpha1.DeorbitFloatingIP: 2} {
		if got := testutil.ToFloat64(m.Deletes.WithLabelValues(typ, OutcomeDeleted)); got != want {
			t.Errorf("vitals_deorbit_deletes_total{type=%s,outcome=deleted} = %v, want %v", typ, got, want)
		}
	}
}

package cloudsim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/common/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/quotas"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

func netSubnet(t *testing.T, c clients, cidr string) (string, string) {
	t.Helper()
	n, err := networks.Create(t.Context(), c.net, networks.CreateOpts{Name: "n-" + cidr}).Extract()
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	s, err := subnets.Create(t.Context(), c.net, subnets.CreateOpts{NetworkID: n.ID, CIDR: cidr, IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatalf("create subnet: %v", err)
	}
	if s.GatewayIP == "" || s.CIDR != cidr {
		t.Fatalf("subnet = %+v", s)
	}
	return n.ID, s.ID
}

func TestNeutronExtensionsAndQuotas(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	pages, err := extensions.List(c.net).AllPages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	exts, err := extensions.ExtractExtensions(pages)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, x := range exts {
		have[x.Alias] = true
	}
	for _, want := range []string{"router", "extraroute", "extraroute-atomic", "standard-attr-revisions", "revision-if-match", "quotas"} {
		if !have[want] {
			t.Errorf("extension %s missing", want)
		}
	}
	q, err := quotas.Get(t.Context(), c.net, e.p1).Extract()
	if err != nil || q.Router != 10 || q.Port != 500 {
		t.Fatalf("quota = %+v, %v", q, err)
	}
	netSubnet(t, c, "10.0.0.0/24")
	d, err := quotas.GetDetail(t.Context(), c.net, e.p1).Extract()
	if err != nil || d.Network.Used != 1 || d.Network.Limit != 100 || d.Subnet.Used != 1 {
		t.Fatalf("quota details = %+v, %v", d, err)
	}
	// Over quota is a 409 OverQuota.
	a := e.adminClients(t)
	one := 1
	if _, err := quotas.Update(t.Context(), a.net, e.p1, quotas.UpdateOpts{Network: &one}).Extract(); err != nil {
		t.Fatalf("update quota: %v", err)
	}
	_, err = networks.Create(t.Context(), c.net, networks.CreateOpts{Name: "too many"}).Extract()
	wantCode(t, "create network over quota", err, 409)
	if !strings.Contains(body(err), "OverQuota") {
		t.Fatalf("over quota body = %s", body(err))
	}
	_, err = quotas.Get(t.Context(), c.net, e.admin).Extract()
	wantCode(t, "member reads another project's quota", err, 403)
}

func TestNeutronRoutes(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	_, subnetID := netSubnet(t, c, "10.180.0.0/24")
	r, err := routers.Create(ctx, c.net, routers.CreateOpts{Name: "r"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := routers.AddInterface(ctx, c.net, r.ID, routers.AddInterfaceOpts{SubnetID: subnetID}).Extract(); err != nil {
		t.Fatalf("add interface: %v", err)
	}
	r, err = routers.Get(ctx, c.net, r.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	rev := r.RevisionNumber
	a := routers.Route{DestinationCIDR: "198.19.1.0/24", NextHop: "10.180.0.10"}
	b := routers.Route{DestinationCIDR: "198.19.2.0/24", NextHop: "10.180.0.11"}
	// Update with If-Match at the current revision.
	u, err := routers.Update(ctx, c.net, r.ID, routers.UpdateOpts{Routes: &[]routers.Route{a}, RevisionNumber: &rev}).Extract()
	if err != nil {
		t.Fatalf("update routes: %v", err)
	}
	if len(u.Routes) != 1 || u.RevisionNumber != rev+1 {
		t.Fatalf("after update: %+v", u)
	}
	// A stale revision is 412 and changes nothing.
	_, err = routers.Update(ctx, c.net, r.ID, routers.UpdateOpts{Routes: &[]routers.Route{}, RevisionNumber: &rev}).Extract()
	wantCode(t, "update at a stale revision", err, 412)
	if !strings.Contains(body(err), "RevisionNumberConstraintFailed") {
		t.Fatalf("412 body = %s", body(err))
	}
	// extraroute-atomic.
	x, err := extraroutes.Add(ctx, c.net, r.ID, extraroutes.Opts{Routes: &[]routers.Route{a, b}}).Extract()
	if err != nil || len(x.Routes) != 2 {
		t.Fatalf("add extraroutes = %+v, %v", x, err)
	}
	x, err = extraroutes.Remove(ctx, c.net, r.ID, extraroutes.Opts{Routes: &[]routers.Route{a}}).Extract()
	if err != nil || len(x.Routes) != 1 || x.Routes[0] != b {
		t.Fatalf("remove extraroutes = %+v, %v", x, err)
	}
	// A nexthop outside the router's subnets is refused like Neutron does.
	_, err = extraroutes.Add(ctx, c.net, r.ID, extraroutes.Opts{Routes: &[]routers.Route{{DestinationCIDR: "198.19.9.0/24", NextHop: "192.0.2.1"}}}).Extract()
	wantCode(t, "unconnected nexthop", err, 400)
	if !strings.Contains(body(err), "InvalidRoutes") {
		t.Fatalf("body = %s", body(err))
	}
	// The route limit: RoutesExhausted is a 400.
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) { k.MaxRoutes = 2 }); err != nil {
		t.Fatal(err)
	}
	more := []routers.Route{a, {DestinationCIDR: "198.19.3.0/24", NextHop: "10.180.0.12"}}
	_, err = extraroutes.Add(ctx, c.net, r.ID, extraroutes.Opts{Routes: &more}).Extract()
	wantCode(t, "routes over max_routes", err, 400)
	if !strings.Contains(body(err), "RoutesExhausted") || !strings.Contains(body(err), "exceeds the maximum 2") {
		t.Fatalf("body = %s", body(err))
	}
	// Bad input.
	_, err = routers.Update(ctx, c.net, r.ID, routers.UpdateOpts{Routes: &[]routers.Route{{DestinationCIDR: "nope", NextHop: "10.180.0.10"}}}).Extract()
	wantCode(t, "bad destination", err, 400)
	_, err = routers.Get(ctx, c.net, "missing").Extract()
	wantCode(t, "get missing router", err, 404)
	if !strings.Contains(body(err), `"RouterNotFound"`) {
		t.Fatalf("404 body = %s", body(err))
	}
	// The interface cannot go while a route needs it; the router cannot go while it has one.
	_, err = routers.RemoveInterface(ctx, c.net, r.ID, routers.RemoveInterfaceOpts{SubnetID: subnetID}).Extract()
	wantCode(t, "remove interface used by a route", err, 409)
	wantCode(t, "delete router with interface", routers.Delete(ctx, c.net, r.ID).ExtractErr(), 409)
	// Other projects do not see it; the admin does.
	a2 := e.adminClients(t)
	pid := e.sim.CreateProject("p2")
	mustUser(t, e.sim, "u2", "pw2", false, pid)
	c2 := newClients(t, e.provider(t, "u2", "pw2", "p2"))
	_, err = routers.Get(ctx, c2.net, r.ID).Extract()
	wantCode(t, "other project reads router", err, 404)
	if _, err := routers.Get(ctx, a2.net, r.ID).Extract(); err != nil {
		t.Fatalf("admin reads router: %v", err)
	}
}

func TestNeutronPortsPaging(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	netID, subnetID := netSubnet(t, c, "10.1.0.0/24")
	var ids []string
	for i := 0; i < 7; i++ {
		p, err := ports.Create(ctx, c.net, ports.CreateOpts{NetworkID: netID, Name: "p"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if len(p.FixedIPs) != 1 || p.FixedIPs[0].SubnetID != subnetID || p.MACAddress == "" || len(p.SecurityGroups) != 1 {
			t.Fatalf("port = %+v", p)
		}
		ids = append(ids, p.ID)
	}
	pagesSeen := 0
	var got []ports.Port
	err := ports.List(c.net, ports.ListOpts{NetworkID: netID, Limit: 2}).EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		pagesSeen++
		ps, err := ports.ExtractPorts(page)
		got = append(got, ps...)
		return true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || pagesSeen != 4 {
		t.Fatalf("paged %d ports in %d pages, want 7 in 4", len(got), pagesSeen)
	}
	// Fixed IP filter and a fixed address that is taken.
	want := got[3].FixedIPs[0].IPAddress
	found, err := ports.List(c.net, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: want}}}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := ports.ExtractPorts(found); len(ps) != 1 || ps[0].ID != got[3].ID {
		t.Fatalf("filter by fixed IP %s = %+v", want, ps)
	}
	_, err = ports.Create(ctx, c.net, ports.CreateOpts{NetworkID: netID, FixedIPs: []ports.IP{{SubnetID: subnetID, IPAddress: want}}}).Extract()
	wantCode(t, "port with a taken IP", err, 409)
	// Allowed address pairs and If-Match.
	rev := got[0].RevisionNumber
	pairs := []ports.AddressPair{{IPAddress: "198.19.1.0/24"}}
	p, err := ports.Update(ctx, c.net, got[0].ID, ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &rev}).Extract()
	if err != nil || len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].MACAddress != p.MACAddress {
		t.Fatalf("update pairs = %+v, %v", p, err)
	}
	_, err = ports.Update(ctx, c.net, got[0].ID, ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &rev}).Extract()
	wantCode(t, "stale port update", err, 412)
	bad := []ports.AddressPair{{IPAddress: "not-an-ip"}}
	_, err = ports.Update(ctx, c.net, got[0].ID, ports.UpdateOpts{AllowedAddressPairs: &bad}).Extract()
	wantCode(t, "bad pair", err, 400)
	// A bad marker is Neutron's 404.
	_, err = ports.List(c.net, ports.ListOpts{Marker: "nope", Limit: 1}).AllPages(ctx)
	wantCode(t, "bad marker", err, 404)
	// The network cannot go while ports use it.
	wantCode(t, "delete network in use", networks.Delete(ctx, c.net, netID).ExtractErr(), 409)
	for _, id := range ids {
		if err := ports.Delete(ctx, c.net, id).ExtractErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := subnets.Delete(ctx, c.net, subnetID).ExtractErr(); err != nil {
		t.Fatalf("delete subnet: %v", err)
	}
	if err := networks.Delete(ctx, c.net, netID).ExtractErr(); err != nil {
		t.Fatalf("delete network: %v", err)
	}
}

func TestNeutronSecurityGroups(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	g, err := groups.Create(ctx, c.net, groups.CreateOpts{Name: "nodes"}).Extract()
	if err != nil || len(g.Rules) != 2 {
		t.Fatalf("create group = %+v, %v", g, err)
	}
	opts := rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID,
		Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "10.0.0.5/8"}
	r, err := rules.Create(ctx, c.net, opts).Extract()
	if err != nil || r.RemoteIPPrefix != "10.0.0.0/8" {
		t.Fatalf("create rule = %+v, %v", r, err)
	}
	_, err = rules.Create(ctx, c.net, opts).Extract()
	wantCode(t, "duplicate rule", err, 409)
	if !strings.Contains(body(err), "SecurityGroupRuleExists") {
		t.Fatalf("body = %s", body(err))
	}
	g2, err := groups.Get(ctx, c.net, g.ID).Extract()
	if err != nil || len(g2.Rules) != 3 || g2.RevisionNumber <= g.RevisionNumber {
		t.Fatalf("group after rule = %+v, %v", g2, err)
	}
	bad := opts
	bad.PortRangeMin, bad.PortRangeMax = 30, 20
	_, err = rules.Create(ctx, c.net, bad).Extract()
	wantCode(t, "min > max", err, 400)
	if err := rules.Delete(ctx, c.net, r.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "delete deleted rule", rules.Delete(ctx, c.net, r.ID).ExtractErr(), 404)
	pages, err := groups.List(c.net, groups.ListOpts{Limit: 1}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := groups.ExtractGroups(pages)
	if len(all) != 2 { // default + nodes
		t.Fatalf("groups = %d, want 2", len(all))
	}
	if err := groups.Delete(ctx, c.net, g.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
}

func TestNeutronFieldsAndProbePath(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	netSubnet(t, c, "10.4.0.0/24")
	// The Neutron health check's probe: networks?limit=1&fields=id.
	var b map[string][]map[string]any
	if _, err := c.net.Get(t.Context(), c.net.ServiceURL("networks")+"?limit=1&fields=id", &b, nil); err != nil {
		t.Fatal(err)
	}
	if len(b["networks"]) != 1 || len(b["networks"][0]) != 1 || b["networks"][0]["id"] == "" {
		t.Fatalf("fields=id answer = %v", b)
	}
}

package contract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/snapshots"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/tags"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
	"github.com/vitalsproject/vitals/openstack"
)

// Env describes the cloud under test.
type Env struct {
	// Config connects to the cloud (a project member is enough; admin works too).
	Config openstack.Config
	// Which services beyond Keystone and Neutron the cloud offers. A missing one skips its tests.
	Compute      bool
	BlockStorage bool
	LoadBalancer bool
	// ImageID boots servers; "": $OS_TEST_IMAGE_ID, else the image named "cirros-fake" in Glance.
	ImageID string
	// FlavorID boots servers; "": "1".
	FlavorID string
	// Timeout bounds each wait for an asynchronous state (server ACTIVE, volume gone); 0: 2m.
	Timeout time.Duration
	// Poll is the interval of those waits; 0: 250ms.
	Poll time.Duration
	// ExternalNetworkID is an external network with a subnet that floating IPs are allocated from
	// (ExternalNetwork makes one); "": the floating IP tests are skipped.
	ExternalNetworkID string
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, env Env) {
	if env.Timeout == 0 {
		env.Timeout = 2 * time.Minute
	}
	if env.Poll == 0 {
		env.Poll = 250 * time.Millisecond
	}
	ctx := t.Context()
	c, err := openstack.Connect(ctx, env.Config)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	s := &suite{env: env, cloud: c}
	// The tests share nothing but the connection, so they run in parallel.
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"Routers", s.routers}, {"Networks", s.networks}, {"Ports", s.ports}, {"FloatingIPs", s.floatingIPs}, {"SecurityGroups", s.securityGroups}, {"NotFound", s.notFound},
		{"Servers", s.servers}, {"Volumes", s.volumes}, {"LoadBalancers", s.loadBalancers}, {"Quotas", s.quotas},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.f(t)
		})
	}
}

type suite struct {
	env   Env
	cloud *openstack.Cloud
}

// name returns a unique resource name.
func name(t *testing.T, what string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("vitals-contract-%s-%s", what, hex.EncodeToString(b))
}

func (s *suite) client(t *testing.T, svc openstack.Service) *gophercloud.ServiceClient {
	t.Helper()
	c, err := s.cloud.Client(svc)
	if err != nil {
		t.Fatalf("%s client: %v", svc, err)
	}
	return c
}

// cleanup registers f, logging (not failing on) a 404: the test may have deleted it already.
func cleanup(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := f(ctx); err != nil && !openstack.IsNotFound(err) {
			t.Errorf("cleanup %s: %v", what, err)
		}
	})
}

// eventually polls f until it returns true, an error, or the timeout.
func (s *suite) eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), s.env.Timeout)
	defer cancel()
	for {
		done, err := f(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not done after %s", what, s.env.Timeout)
		case <-time.After(s.env.Poll):
		}
	}
}

// gone polls get until the resource answers 404. Until then every state it shows must be one of between (the
// states of a deletion under way): a service that deletes asynchronously never shows the resource as it was.
func (s *suite) gone(t *testing.T, what string, get func(ctx context.Context) (string, error), between ...string) {
	t.Helper()
	s.eventually(t, what+" gone", func(ctx context.Context) (bool, error) {
		state, err := get(ctx)
		if openstack.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !slices.Contains(between, state) {
			return false, fmt.Errorf("%s shows %q while deleted; want one of %v, then 404", what, state, between)
		}
		return false, nil
	})
}

// network creates a network (and a subnet with cidr unless empty) that the test removes at its end.
func (s *suite) network(t *testing.T, cidr string) (netID, subnetID string) {
	t.Helper()
	ctx := t.Context()
	nc := s.client(t, openstack.ServiceNetworking)
	n, err := networks.Create(ctx, nc, networks.CreateOpts{Name: name(t, "net")}).Extract()
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	cleanup(t, "network "+n.ID, func(ctx context.Context) error {
		// A port whose create timed out on our side may exist all the same: delete what is left.
		if pages, err := ports.List(nc, ports.ListOpts{NetworkID: n.ID}).AllPages(ctx); err == nil {
			left, _ := ports.ExtractPorts(pages)
			for _, p := range left {
				if p.DeviceOwner == "" {
					_ = ports.Delete(ctx, nc, p.ID).ExtractErr()
				}
			}
		}
		return networks.Delete(ctx, nc, n.ID).ExtractErr()
	})
	if cidr == "" {
		return n.ID, ""
	}
	sn, err := subnets.Create(ctx, nc, subnets.CreateOpts{NetworkID: n.ID, CIDR: cidr, IPVersion: gophercloud.IPv4, Name: name(t, "subnet")}).Extract()
	if err != nil {
		t.Fatalf("create subnet: %v", err)
	}
	cleanup(t, "subnet "+sn.ID, func(ctx context.Context) error { return subnets.Delete(ctx, nc, sn.ID).ExtractErr() })
	return n.ID, sn.ID
}

func routeSet(rs []openstack.Route) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Destination+" via "+r.NextHop)
	}
	sort.Strings(out)
	return out
}

func (s *suite) routers(t *testing.T) {
	ctx := t.Context()
	nc := s.client(t, openstack.ServiceNetworking)
	_, subnetID := s.network(t, "10.77.0.0/24")
	rname := name(t, "router")
	r, err := routers.Create(ctx, nc, routers.CreateOpts{Name: rname}).Extract()
	if err != nil {
		t.Fatalf("create router: %v", err)
	}
	cleanup(t, "router "+r.ID, func(ctx context.Context) error { return routers.Delete(ctx, nc, r.ID).ExtractErr() })
	if _, err := routers.AddInterface(ctx, nc, r.ID, routers.AddInterfaceOpts{SubnetID: subnetID}).Extract(); err != nil {
		t.Fatalf("add router interface: %v", err)
	}
	cleanup(t, "router interface", func(ctx context.Context) error {
		// Routes through the interface's subnet must go before the interface.
		if _, err := routers.Update(ctx, nc, r.ID, routers.UpdateOpts{Routes: &[]routers.Route{}}).Extract(); err != nil {
			return err
		}
		_, err := routers.RemoveInterface(ctx, nc, r.ID, routers.RemoveInterfaceOpts{SubnetID: subnetID}).Extract()
		return err
	})

	atomic, err := s.cloud.AtomicRoutes(ctx)
	if err != nil || !atomic {
		t.Fatalf("AtomicRoutes = %v, %v; want true (extraroute-atomic)", atomic, err)
	}
	a := openstack.Route{Destination: "10.244.1.0/24", NextHop: "10.77.0.11"}
	b := openstack.Route{Destination: "10.244.2.0/24", NextHop: "10.77.0.12"}
	c := openstack.Route{Destination: "10.244.3.0/24", NextHop: "10.77.0.13"}

	got, err := s.cloud.AddRoutes(ctx, r.ID, []openstack.Route{a, b})
	if err != nil {
		t.Fatalf("AddRoutes: %v", err)
	}
	if want := routeSet([]openstack.Route{a, b}); !slices.Equal(routeSet(got.Routes), want) {
		t.Fatalf("after AddRoutes: routes %v, want %v", routeSet(got.Routes), want)
	}
	// Adding a route that is there already changes nothing.
	got, err = s.cloud.AddRoutes(ctx, r.ID, []openstack.Route{a})
	if err != nil || len(got.Routes) != 2 {
		t.Fatalf("AddRoutes of a present route: %v, routes %v; want 2 routes", err, got)
	}
	got, err = s.cloud.RemoveRoutes(ctx, r.ID, []openstack.Route{a})
	if err != nil {
		t.Fatalf("RemoveRoutes: %v", err)
	}
	if want := routeSet([]openstack.Route{b}); !slices.Equal(routeSet(got.Routes), want) {
		t.Fatalf("after RemoveRoutes: routes %v, want %v", routeSet(got.Routes), want)
	}
	// Removing a route that is gone already is not an error.
	if _, err := s.cloud.RemoveRoutes(ctx, r.ID, []openstack.Route{a}); err != nil {
		t.Fatalf("RemoveRoutes of an absent route: %v", err)
	}

	cur, err := s.cloud.GetRouter(ctx, r.ID)
	if err != nil {
		t.Fatalf("GetRouter: %v", err)
	}
	if cur.ID != r.ID || cur.Name != rname || !slices.Equal(routeSet(cur.Routes), routeSet([]openstack.Route{b})) {
		t.Fatalf("GetRouter = %+v", cur)
	}
	set, err := s.cloud.SetRoutes(ctx, r.ID, []openstack.Route{b, c}, cur.RevisionNumber)
	if err != nil {
		t.Fatalf("SetRoutes at the current revision %d: %v", cur.RevisionNumber, err)
	}
	if !slices.Equal(routeSet(set.Routes), routeSet([]openstack.Route{b, c})) || set.RevisionNumber <= cur.RevisionNumber {
		t.Fatalf("after SetRoutes: routes %v revision %d (was %d)", routeSet(set.Routes), set.RevisionNumber, cur.RevisionNumber)
	}
	_, err = s.cloud.SetRoutes(ctx, r.ID, nil, cur.RevisionNumber)
	if !openstack.IsConflict(err) {
		t.Fatalf("SetRoutes at stale revision %d: err %v, want a conflict", cur.RevisionNumber, err)
	}
	if after, err := s.cloud.GetRouter(ctx, r.ID); err != nil || len(after.Routes) != 2 {
		t.Fatalf("a refused SetRoutes changed the router: %+v, %v", after, err)
	}

	for _, size := range []int{0, 1} {
		list, err := s.cloud.ListRouters(ctx, openstack.ListOpts{Name: rname, PageSize: size})
		if err != nil {
			t.Fatalf("ListRouters(page size %d): %v", size, err)
		}
		if len(list) != 1 || list[0].ID != r.ID || len(list[0].Routes) != 2 {
			t.Fatalf("ListRouters(name, page size %d) = %+v; want router %s with 2 routes", size, list, r.ID)
		}
	}
	// Two more routers of the same project: a page size of 1 must read them all.
	project := s.cloud.ProjectID()
	want := []string{r.ID}
	for i := 0; i < 2; i++ {
		x, err := routers.Create(ctx, nc, routers.CreateOpts{Name: name(t, "router")}).Extract()
		if err != nil {
			t.Fatalf("create router: %v", err)
		}
		cleanup(t, "router "+x.ID, func(ctx context.Context) error { return routers.Delete(ctx, nc, x.ID).ExtractErr() })
		want = append(want, x.ID)
	}
	all, err := s.cloud.ListRouters(ctx, openstack.ListOpts{ProjectID: project, PageSize: 1})
	if err != nil {
		t.Fatalf("ListRouters(project, page size 1): %v", err)
	}
	if missing := missingIDs(want, routerIDs(all)); len(missing) > 0 {
		t.Fatalf("ListRouters(page size 1) misses %v of %d routers", missing, len(all))
	}
}

func routerIDs(rs []openstack.Router) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func missingIDs(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// quotas reads the project's quotas of each service as the doctor does: every resource it judges is
// there, with a limit that holds what is used (or -1), and the network the test holds is counted.
func (s *suite) quotas(t *testing.T) {
	ctx := t.Context()
	project := s.cloud.ProjectID()
	s.network(t, "")
	for _, tc := range []struct {
		service   openstack.Service
		offered   bool
		resources []string
	}{
		{openstack.ServiceNetworking, true, []string{"port", "floatingip", "security_group", "security_group_rule", "network", "subnet", "router"}},
		{openstack.ServiceBlockStorage, s.env.BlockStorage, []string{"volumes", "snapshots", "gigabytes"}},
		{openstack.ServiceLoadBalancer, s.env.LoadBalancer, []string{"load_balancer"}},
	} {
		if !tc.offered {
			continue
		}
		qs, err := s.cloud.Quotas(ctx, tc.service, project)
		if err != nil {
			t.Errorf("Quotas(%s): %v", tc.service, err)
			continue
		}
		got := map[string]openstack.Quota{}
		for _, q := range qs {
			got[q.Resource] = q
		}
		for _, r := range tc.resources {
			q, ok := got[r]
			switch {
			case !ok:
				t.Errorf("Quotas(%s): no %s in %+v", tc.service, r, qs)
			case q.Used < 0 || q.Reserved < 0 || q.Limit < -1:
				t.Errorf("Quotas(%s): %+v; want counts >= 0 and a limit >= -1", tc.service, q)
			}
		}
		if n := got["network"]; tc.service == openstack.ServiceNetworking && n.Used < 1 {
			t.Errorf("Quotas(network): %+v; the test's network is not counted", n)
		}
	}
	if _, err := s.cloud.Quotas(ctx, openstack.ServiceCompute, project); err == nil {
		t.Errorf("Quotas(compute): no error; Vitals reads no compute quotas")
	}
}

func (s *suite) networks(t *testing.T) {
	ctx := t.Context()
	netID, subnetID := s.network(t, "10.77.0.0/24")
	n, err := s.cloud.GetNetwork(ctx, netID)
	if err != nil {
		t.Fatalf("GetNetwork: %v", err)
	}
	project := s.cloud.ProjectID()
	if n.ID != netID || n.ProjectID != project || n.Name == "" {
		t.Errorf("GetNetwork = %+v; want ID %s in project %s with a name", n, netID, project)
	}
	sub, err := s.cloud.GetSubnet(ctx, subnetID)
	if err != nil {
		t.Fatalf("GetSubnet: %v", err)
	}
	if sub.ID != subnetID || sub.NetworkID != netID || sub.ProjectID != project || sub.CIDR != "10.77.0.0/24" || sub.IPVersion != 4 {
		t.Errorf("GetSubnet = %+v; want ID %s on network %s in project %s, 10.77.0.0/24, IPv4", sub, subnetID, netID, project)
	}
}

func (s *suite) ports(t *testing.T) {
	ctx := t.Context()
	nc := s.client(t, openstack.ServiceNetworking)
	netID, _ := s.network(t, "")
	device := name(t, "device")
	var ids []string
	var firstName string
	for i := 0; i < 3; i++ {
		co := ports.CreateOpts{NetworkID: netID, Name: name(t, "port")}
		if i == 0 {
			co.DeviceID = device
			firstName = co.Name
		}
		p, err := ports.Create(ctx, nc, co).Extract()
		if err != nil {
			t.Fatalf("create port: %v", err)
		}
		cleanup(t, "port "+p.ID, func(ctx context.Context) error { return ports.Delete(ctx, nc, p.ID).ExtractErr() })
		ids = append(ids, p.ID)
	}
	for _, size := range []int{0, 1, 2} {
		list, err := s.cloud.ListPorts(ctx, openstack.ListOpts{NetworkID: netID, PageSize: size})
		if err != nil {
			t.Fatalf("ListPorts(network, page size %d): %v", size, err)
		}
		got := make([]string, 0, len(list))
		for _, p := range list {
			got = append(got, p.ID)
			if p.NetworkID != netID {
				t.Errorf("port %s on network %s, asked for %s", p.ID, p.NetworkID, netID)
			}
		}
		if len(list) != 3 || len(missingIDs(ids, got)) > 0 {
			t.Fatalf("ListPorts(network, page size %d) = %v; want %v", size, got, ids)
		}
	}
	byDevice, err := s.cloud.ListPorts(ctx, openstack.ListOpts{DeviceID: device})
	if err != nil || len(byDevice) != 1 || byDevice[0].ID != ids[0] {
		t.Fatalf("ListPorts(device) = %+v, %v; want port %s", byDevice, err, ids[0])
	}
	byName, err := s.cloud.ListPorts(ctx, openstack.ListOpts{Name: firstName, PageSize: 1})
	if err != nil || len(byName) != 1 || byName[0].ID != ids[0] {
		t.Fatalf("ListPorts(name) = %+v, %v; want port %s", byName, err, ids[0])
	}

	pairs := []openstack.AddressPair{{IPAddress: "10.244.1.0/24"}, {IPAddress: "10.10.0.100"}}
	read, err := s.cloud.GetPort(ctx, ids[1])
	if err != nil {
		t.Fatalf("GetPort: %v", err)
	}
	p, err := s.cloud.SetAllowedAddressPairs(ctx, ids[1], read.RevisionNumber, pairs)
	if err != nil {
		t.Fatalf("SetAllowedAddressPairs at the port's revision %d: %v", read.RevisionNumber, err)
	}
	if p.RevisionNumber <= read.RevisionNumber {
		t.Fatalf("after SetAllowedAddressPairs: revision %d, was %d", p.RevisionNumber, read.RevisionNumber)
	}
	// A writer that read the port before that write (the revision it read is stale) changes nothing.
	if _, err := s.cloud.SetAllowedAddressPairs(ctx, ids[1], read.RevisionNumber, nil); !openstack.IsConflict(err) {
		t.Fatalf("SetAllowedAddressPairs at the stale revision %d: err %v, want a conflict (412)", read.RevisionNumber, err)
	}
	if len(p.AllowedAddressPairs) != 2 || p.AllowedAddressPairs[0].MACAddress == "" && p.MACAddress == "" {
		t.Fatalf("after SetAllowedAddressPairs: %+v", p.AllowedAddressPairs)
	}
	gotIPs := []string{p.AllowedAddressPairs[0].IPAddress, p.AllowedAddressPairs[1].IPAddress}
	sort.Strings(gotIPs)
	if !slices.Equal(gotIPs, []string{"10.10.0.100", "10.244.1.0/24"}) {
		t.Fatalf("allowed address pairs = %v", gotIPs)
	}
	p, err = s.cloud.SetAllowedAddressPairs(ctx, ids[1], 0, nil)
	if err != nil || len(p.AllowedAddressPairs) != 0 {
		t.Fatalf("clearing allowed address pairs: %+v, %v", p, err)
	}
}

// ExternalNetwork creates an external network with a subnet of cidr for the floating IP tests (with
// cfg's credentials, which must be an admin's) and removes it when t ends.
func ExternalNetwork(t *testing.T, cfg openstack.Config, cidr string) string {
	t.Helper()
	ctx := t.Context()
	c, err := openstack.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	nc, err := c.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatalf("network client: %v", err)
	}
	yes := true
	n, err := networks.Create(ctx, nc, external.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: name(t, "external")}, External: &yes}).Extract()
	if err != nil {
		t.Fatalf("create external network: %v", err)
	}
	cleanup(t, "external network "+n.ID, func(ctx context.Context) error { return networks.Delete(ctx, nc, n.ID).ExtractErr() })
	sn, err := subnets.Create(ctx, nc, subnets.CreateOpts{NetworkID: n.ID, CIDR: cidr, IPVersion: gophercloud.IPv4, Name: name(t, "external")}).Extract()
	if err != nil {
		t.Fatalf("create external subnet: %v", err)
	}
	cleanup(t, "external subnet "+sn.ID, func(ctx context.Context) error { return subnets.Delete(ctx, nc, sn.ID).ExtractErr() })
	return n.ID
}

// floatingIPs: the floating IPs of a load balancer's VIP port as the cloud controller manager makes them
// (on a port owned by Octavia, reachable through a router with its gateway on the external network), the
// port filter by owner, Neutron taking a floating IP off a port that is deleted, deletes and 404s.
func (s *suite) floatingIPs(t *testing.T) {
	if s.env.ExternalNetworkID == "" {
		prereq.Missing(t, "no external network given")
	}
	ctx := t.Context()
	nc := s.client(t, openstack.ServiceNetworking)
	netID, subnetID := s.network(t, "10.81.0.0/24")
	r, err := routers.Create(ctx, nc, routers.CreateOpts{Name: name(t, "router"),
		GatewayInfo: &routers.GatewayInfo{NetworkID: s.env.ExternalNetworkID}}).Extract()
	if err != nil {
		t.Fatalf("create router with a gateway: %v", err)
	}
	cleanup(t, "router "+r.ID, func(ctx context.Context) error { return routers.Delete(ctx, nc, r.ID).ExtractErr() })
	if _, err := routers.AddInterface(ctx, nc, r.ID, routers.AddInterfaceOpts{SubnetID: subnetID}).Extract(); err != nil {
		t.Fatalf("add router interface: %v", err)
	}
	cleanup(t, "router interface", func(ctx context.Context) error {
		_, err := routers.RemoveInterface(ctx, nc, r.ID, routers.RemoveInterfaceOpts{SubnetID: subnetID}).Extract()
		return err
	})
	lbID := name(t, "lb")
	vip, err := ports.Create(ctx, nc, ports.CreateOpts{NetworkID: netID, Name: "octavia-lb-" + lbID, DeviceID: "lb-" + lbID, DeviceOwner: "Octavia"}).Extract()
	if err != nil {
		t.Fatalf("create a VIP port: %v", err)
	}
	cleanup(t, "port "+vip.ID, func(ctx context.Context) error { return ports.Delete(ctx, nc, vip.ID).ExtractErr() })
	plain, err := ports.Create(ctx, nc, ports.CreateOpts{NetworkID: netID, Name: name(t, "port")}).Extract()
	if err != nil {
		t.Fatalf("create port: %v", err)
	}
	cleanup(t, "port "+plain.ID, func(ctx context.Context) error { return ports.Delete(ctx, nc, plain.ID).ExtractErr() })
	owned, err := s.cloud.ListPorts(ctx, openstack.ListOpts{NetworkID: netID, DeviceOwner: "Octavia", PageSize: 1})
	if err != nil || len(owned) != 1 || owned[0].ID != vip.ID || owned[0].Name != "octavia-lb-"+lbID || owned[0].DeviceID != "lb-"+lbID {
		t.Fatalf("ListPorts(network, device owner Octavia) = %+v, %v; want port %s", owned, err, vip.ID)
	}
	if got, err := s.cloud.GetPort(ctx, vip.ID); err != nil || got.DeviceOwner != "Octavia" || got.ProjectID == "" {
		t.Fatalf("GetPort = %+v, %v", got, err)
	}

	create := func(description, portID string) *floatingips.FloatingIP {
		t.Helper()
		f, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: s.env.ExternalNetworkID, PortID: portID, Description: description}).Extract()
		if err != nil {
			t.Fatalf("create floating IP (port %q): %v", portID, err)
		}
		cleanup(t, "floating IP "+f.ID, func(ctx context.Context) error { return floatingips.Delete(ctx, nc, f.ID).ExtractErr() })
		return f
	}
	desc := "Floating IP for Kubernetes external service default/web from cluster " + lbID
	onVIP := create(desc, vip.ID)
	loose := create(name(t, "fip"), "")
	if _, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: netID, Description: "not external"}).Extract(); err == nil {
		t.Fatal("a floating IP of a network that is not external was created")
	}
	byID := func(list []openstack.FloatingIP) map[string]openstack.FloatingIP {
		m := map[string]openstack.FloatingIP{}
		for _, f := range list {
			m[f.ID] = f
		}
		return m
	}
	for _, size := range []int{0, 1} {
		list, err := s.cloud.ListFloatingIPs(ctx, openstack.ListOpts{PageSize: size})
		if err != nil {
			t.Fatalf("ListFloatingIPs(page size %d): %v", size, err)
		}
		m := byID(list)
		f, ok := m[onVIP.ID]
		if !ok || f.PortID != vip.ID || f.FixedIP != vip.FixedIPs[0].IPAddress || f.Description != desc || f.NetworkID != s.env.ExternalNetworkID ||
			f.Address == "" || f.ProjectID == "" {
			t.Fatalf("ListFloatingIPs(page size %d): %+v (found %v); want on port %s with %q", size, f, ok, vip.ID, desc)
		}
		if l, ok := m[loose.ID]; !ok || l.PortID != "" || l.FixedIP != "" {
			t.Fatalf("ListFloatingIPs(page size %d): the unassociated one: %+v (found %v)", size, l, ok)
		}
	}
	// Neutron takes the floating IP off a port that goes.
	if err := s.cloud.DeletePort(ctx, vip.ID); err != nil {
		t.Fatalf("DeletePort: %v", err)
	}
	if _, err := s.cloud.GetPort(ctx, vip.ID); !openstack.IsNotFound(err) {
		t.Fatalf("GetPort after delete: %v; want 404", err)
	}
	s.eventually(t, "floating IP off the deleted port", func(ctx context.Context) (bool, error) {
		f, err := s.cloud.GetFloatingIP(ctx, onVIP.ID)
		if err != nil {
			return false, err
		}
		return f.PortID == "" && f.FixedIP == "", nil
	})
	for _, id := range []string{onVIP.ID, loose.ID} {
		if err := s.cloud.DeleteFloatingIP(ctx, id); err != nil {
			t.Fatalf("DeleteFloatingIP: %v", err)
		}
		if _, err := s.cloud.GetFloatingIP(ctx, id); !openstack.IsNotFound(err) {
			t.Fatalf("GetFloatingIP after delete: %v; want 404", err)
		}
		if err := s.cloud.DeleteFloatingIP(ctx, id); !openstack.IsNotFound(err) {
			t.Fatalf("DeleteFloatingIP again: %v; want 404", err)
		}
	}
	list, err := s.cloud.ListFloatingIPs(ctx, openstack.ListOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if m := byID(list); len(m[onVIP.ID].ID)+len(m[loose.ID].ID) > 0 {
		t.Fatalf("ListFloatingIPs after the deletes still shows them: %+v", list)
	}
}

func (s *suite) securityGroups(t *testing.T) {
	ctx := t.Context()
	nc := s.client(t, openstack.ServiceNetworking)
	gname := name(t, "sg")
	var ids []string
	for i := 0; i < 2; i++ {
		g, err := groups.Create(ctx, nc, groups.CreateOpts{Name: gname, Description: "vitals contract"}).Extract()
		if err != nil {
			t.Fatalf("create security group: %v", err)
		}
		cleanup(t, "security group "+g.ID, func(ctx context.Context) error { return groups.Delete(ctx, nc, g.ID).ExtractErr() })
		ids = append(ids, g.ID)
	}
	list, err := s.cloud.ListSecurityGroups(ctx, openstack.ListOpts{Name: gname, PageSize: 1})
	if err != nil {
		t.Fatalf("ListSecurityGroups(page size 1): %v", err)
	}
	if len(list) != 2 {
		t.Fatalf("ListSecurityGroups(name, page size 1) = %d groups, want 2", len(list))
	}
	var g openstack.SecurityGroup
	for _, x := range list {
		if x.ID == ids[0] {
			g = x
		}
	}
	if g.ID == "" || len(g.Rules) != 2 { // Neutron gives every group two egress rules (IPv4, IPv6)
		t.Fatalf("group %s: %+v; want it with 2 default egress rules", ids[0], g)
	}
	rule, err := s.cloud.CreateSecurityGroupRule(ctx, ids[0], openstack.SecurityGroupRule{
		Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 6443, PortRangeMax: 6443,
		RemoteIPPrefix: "10.0.0.0/8", Description: "kube-apiserver"})
	if err != nil {
		t.Fatalf("CreateSecurityGroupRule: %v", err)
	}
	if rule.ID == "" || rule.PortRangeMin != 6443 || rule.Protocol != "tcp" || rule.RemoteIPPrefix != "10.0.0.0/8" || rule.Direction != "ingress" {
		t.Fatalf("created rule = %+v", rule)
	}
	// The same rule again is a conflict.
	if _, err := s.cloud.CreateSecurityGroupRule(ctx, ids[0], openstack.SecurityGroupRule{
		Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 6443, PortRangeMax: 6443,
		RemoteIPPrefix: "10.0.0.0/8"}); !openstack.IsConflict(err) {
		t.Fatalf("duplicate rule: err %v, want a conflict", err)
	}
	list, err = s.cloud.ListSecurityGroups(ctx, openstack.ListOpts{Name: gname})
	if err != nil {
		t.Fatalf("ListSecurityGroups: %v", err)
	}
	if !hasRule(list, ids[0], rule.ID) {
		t.Fatalf("rule %s not listed in group %s", rule.ID, ids[0])
	}
	if err := s.cloud.DeleteSecurityGroupRule(ctx, rule.ID); err != nil {
		t.Fatalf("DeleteSecurityGroupRule: %v", err)
	}
	if err := s.cloud.DeleteSecurityGroupRule(ctx, rule.ID); !openstack.IsNotFound(err) {
		t.Fatalf("deleting a deleted rule: err %v, want not found", err)
	}
	list, err = s.cloud.ListSecurityGroups(ctx, openstack.ListOpts{Name: gname})
	if err != nil || hasRule(list, ids[0], rule.ID) {
		t.Fatalf("rule %s still listed after delete (err %v)", rule.ID, err)
	}
}

func hasRule(gs []openstack.SecurityGroup, groupID, ruleID string) bool {
	for _, g := range gs {
		if g.ID != groupID {
			continue
		}
		for _, r := range g.Rules {
			if r.ID == ruleID {
				return true
			}
		}
	}
	return false
}

// missingUUID is a well-formed ID that no resource has.
const missingUUID = "00000000-0000-4000-8000-000000000000"

func (s *suite) notFound(t *testing.T) {
	ctx := t.Context()
	if _, err := s.cloud.GetRouter(ctx, missingUUID); !openstack.IsNotFound(err) {
		t.Errorf("GetRouter(missing): err %v, want not found", err)
	}
	if _, err := s.cloud.GetNetwork(ctx, missingUUID); !openstack.IsNotFound(err) {
		t.Errorf("GetNetwork(missing): err %v, want not found", err)
	}
	if _, err := s.cloud.GetSubnet(ctx, missingUUID); !openstack.IsNotFound(err) {
		t.Errorf("GetSubnet(missing): err %v, want not found", err)
	}
	if _, err := s.cloud.AddRoutes(ctx, missingUUID, []openstack.Route{{Destination: "10.1.0.0/24", NextHop: "10.0.0.1"}}); !openstack.IsNotFound(err) {
		t.Errorf("AddRoutes(missing router): err %v, want not found", err)
	}
	if _, err := s.cloud.SetAllowedAddressPairs(ctx, missingUUID, 0, nil); !openstack.IsNotFound(err) {
		t.Errorf("SetAllowedAddressPairs(missing port): err %v, want not found", err)
	}
	if s.env.Compute {
		if _, err := s.cloud.GetServer(ctx, missingUUID); !openstack.IsNotFound(err) {
			t.Errorf("GetServer(missing): err %v, want not found", err)
		}
	}
	if s.env.BlockStorage {
		if _, err := s.cloud.GetVolume(ctx, missingUUID); !openstack.IsNotFound(err) {
			t.Errorf("GetVolume(missing): err %v, want not found", err)
		}
	}
	if s.env.LoadBalancer {
		if _, err := s.cloud.GetLoadBalancer(ctx, missingUUID); !openstack.IsNotFound(err) {
			t.Errorf("GetLoadBalancer(missing): err %v, want not found", err)
		}
	}
}

func (s *suite) imageID(t *testing.T) string {
	if s.env.ImageID != "" {
		return s.env.ImageID
	}
	if id := os.Getenv("OS_TEST_IMAGE_ID"); id != "" {
		return id
	}
	ic, err := gcos.NewImageV2(s.cloud.Provider(), gophercloud.EndpointOpts{Region: s.env.Config.Auth.Region})
	if err != nil {
		prereq.Missing(t, "no image to boot: set Env.ImageID or OS_TEST_IMAGE_ID (no image service: %v)", err)
	}
	pages, err := images.List(ic, images.ListOpts{Name: "cirros-fake"}).AllPages(t.Context())
	if err != nil {
		t.Fatalf("look up image cirros-fake: %v", err)
	}
	imgs, err := images.ExtractImages(pages)
	if err != nil || len(imgs) == 0 {
		prereq.Missing(t, "no image to boot: no image named cirros-fake (err %v); set OS_TEST_IMAGE_ID", err)
	}
	return imgs[0].ID
}

func (s *suite) servers(t *testing.T) {
	if !s.env.Compute {
		prereq.Missing(t, "the cloud under test has no Compute service")
	}
	ctx := t.Context()
	cc := s.client(t, openstack.ServiceCompute)
	nc := s.client(t, openstack.ServiceNetworking)
	netID, _ := s.network(t, "10.78.0.0/24")
	image := s.imageID(t)
	flavor := s.env.FlavorID
	if flavor == "" {
		flavor = "1"
	}
	sname := name(t, "node")
	srv, err := servers.Create(ctx, cc, servers.CreateOpts{Name: sname, FlavorRef: flavor, ImageRef: image,
		Networks: []servers.Network{{UUID: netID}}, Metadata: map[string]string{"vitals": "contract"}}, nil).Extract()
	if err != nil {
		t.Fatalf("boot server: %v", err)
	}
	cleanup(t, "server "+srv.ID, func(ctx context.Context) error {
		if err := servers.Delete(ctx, cc, srv.ID).ExtractErr(); err != nil {
			return err
		}
		// Wait until Nova released the port, or the network cannot be deleted.
		for ctx.Err() == nil {
			if _, err := servers.Get(ctx, cc, srv.ID).Extract(); openstack.IsNotFound(err) {
				return nil
			}
			time.Sleep(s.env.Poll)
		}
		return ctx.Err()
	})
	// waitStatus waits for want; a server still in ERROR fails it, unless fromError (a hard reboot of a server in
	// vm_state error shows ERROR until it is done).
	waitStatus := func(want string, fromError ...bool) {
		s.eventually(t, "server "+want, func(ctx context.Context) (bool, error) {
			got, err := s.cloud.GetServer(ctx, srv.ID)
			if err != nil {
				return false, err
			}
			if got.Status == "ERROR" && len(fromError) == 0 {
				return false, fmt.Errorf("server %s in ERROR", srv.ID)
			}
			return got.Status == want, nil
		})
	}
	waitStatus("ACTIVE")

	got, err := s.cloud.GetServer(ctx, srv.ID)
	if err != nil {
		t.Fatalf("GetServer: %v", err)
	}
	if got.Name != sname || got.Metadata["vitals"] != "contract" || got.Created.IsZero() || got.ProjectID == "" {
		t.Fatalf("GetServer = %+v", got)
	}
	if len(got.Addresses) == 0 || got.Addresses[0].Addr == "" || got.Addresses[0].Version != 4 || got.Addresses[0].Type != "fixed" {
		t.Fatalf("server addresses = %+v; want one fixed IPv4 address", got.Addresses)
	}
	// An ACTIVE server has a host: Nova shows the project its hostId (SHA-224 of project and host, 56 hex
	// digits), never the host's name, and its availability zone; the list shows the same.
	if len(got.HostID) != 56 || strings.Trim(got.HostID, "0123456789abcdef") != "" || got.Zone == "" {
		t.Fatalf("GetServer: hostId %q, zone %q; want a SHA-224 in hex and a zone", got.HostID, got.Zone)
	}
	for _, size := range []int{0, 1} {
		list, err := s.cloud.ListServers(ctx, openstack.ListOpts{Name: sname, PageSize: size})
		if err != nil || len(list) != 1 || list[0].ID != srv.ID || list[0].HostID != got.HostID || list[0].Zone != got.Zone {
			t.Fatalf("ListServers(name, page size %d) = %+v, %v; want the server, with its hostId and zone", size, list, err)
		}
	}
	all, err := s.cloud.ListServers(ctx, openstack.ListOpts{PageSize: 1})
	if err != nil {
		t.Fatalf("ListServers(page size 1): %v", err)
	}
	if !slices.ContainsFunc(all, func(x openstack.Server) bool { return x.ID == srv.ID }) {
		t.Fatalf("ListServers(page size 1) misses server %s among %d", srv.ID, len(all))
	}
	// A server's port is found by device ID.
	sp, err := s.cloud.ListPorts(ctx, openstack.ListOpts{DeviceID: srv.ID})
	if err != nil || len(sp) != 1 || sp[0].NetworkID != netID {
		t.Fatalf("ListPorts(device = server) = %+v, %v", sp, err)
	}

	for _, hard := range []bool{false, true} {
		if err := s.cloud.RebootServer(ctx, srv.ID, hard); err != nil {
			t.Fatalf("RebootServer(hard %v): %v", hard, err)
		}
		waitStatus("ACTIVE")
	}
	// A user's stop and start, and the instance-action log that tells them (and the reboots) from the cloud's own:
	// every action of the user carries its user ID and a request ID, oldest first.
	if err := servers.Stop(ctx, cc, srv.ID).ExtractErr(); err != nil {
		t.Fatalf("stop server: %v", err)
	}
	waitStatus("SHUTOFF")
	if err := s.cloud.StartServer(ctx, srv.ID); err != nil {
		t.Fatalf("StartServer: %v", err)
	}
	waitStatus("ACTIVE")
	acts, err := s.cloud.ListServerActions(ctx, srv.ID)
	if err != nil {
		t.Fatalf("ListServerActions: %v", err)
	}
	var seen []string
	for i, a := range acts {
		seen = append(seen, a.Action)
		if a.UserID == "" || a.RequestID == "" || a.StartTime.IsZero() || (i > 0 && a.StartTime.Before(acts[i-1].StartTime)) {
			t.Fatalf("ListServerActions: %+v: want each with its user, request and time, oldest first", acts)
		}
	}
	if want := []string{"create", "reboot", "reboot", "stop", "start"}; !slices.Equal(seen, want) {
		t.Fatalf("ListServerActions: %v, want %v", seen, want)
	}
	// Tags (microversion 2.26) find a server.
	tag := name(t, "tag")
	if err := tags.Add(ctx, cc, srv.ID, tag).ExtractErr(); err != nil {
		t.Fatalf("add server tag: %v", err)
	}
	if list, err := s.cloud.ListServers(ctx, openstack.ListOpts{Tags: []string{tag}}); err != nil || len(list) != 1 || list[0].ID != srv.ID {
		t.Fatalf("ListServers(tag) = %+v, %v", list, err)
	}
	// A server in vm_state error (an admin's os-resetState) refuses a soft reboot; a hard reboot brings it back.
	switch err := servers.ResetState(ctx, cc, srv.ID, servers.StateError).ExtractErr(); {
	case gophercloud.ResponseCodeIs(err, http.StatusForbidden):
		t.Log("not an admin: the error state is not tested")
	case err != nil:
		t.Fatalf("reset state to error: %v", err)
	default:
		if got, err := s.cloud.GetServer(ctx, srv.ID); err != nil || got.Status != "ERROR" || got.VMState != "error" {
			t.Fatalf("after reset to error: %+v, %v", got, err)
		}
		if err := s.cloud.RebootServer(ctx, srv.ID, false); !openstack.IsConflict(err) {
			t.Fatalf("soft reboot in error: %v, want 409", err)
		}
		if err := s.cloud.RebootServer(ctx, srv.ID, true); err != nil {
			t.Fatalf("hard reboot in error: %v", err)
		}
		waitStatus("ACTIVE", true)
		if got, err := s.cloud.GetServer(ctx, srv.ID); err != nil || got.VMState != "active" {
			t.Fatalf("after the hard reboot: %+v, %v", got, err)
		}
	}

	gname := name(t, "sg")
	g, err := groups.Create(ctx, nc, groups.CreateOpts{Name: gname}).Extract()
	if err != nil {
		t.Fatalf("create security group: %v", err)
	}
	cleanup(t, "security group "+g.ID, func(ctx context.Context) error { return groups.Delete(ctx, nc, g.ID).ExtractErr() })
	if err := s.cloud.AddSecurityGroup(ctx, srv.ID, gname); err != nil {
		t.Fatalf("AddSecurityGroup: %v", err)
	}
	if got, err := s.cloud.GetServer(ctx, srv.ID); err != nil || !slices.Contains(got.SecurityGroups, gname) {
		t.Fatalf("after AddSecurityGroup: groups %v, %v", got.SecurityGroups, err)
	}
	if err := s.cloud.RemoveSecurityGroup(ctx, srv.ID, gname); err != nil {
		t.Fatalf("RemoveSecurityGroup: %v", err)
	}
	if got, err := s.cloud.GetServer(ctx, srv.ID); err != nil || slices.Contains(got.SecurityGroups, gname) {
		t.Fatalf("after RemoveSecurityGroup: groups %v, %v", got.SecurityGroups, err)
	}

	if err := s.cloud.DeleteServer(ctx, srv.ID); err != nil {
		t.Fatalf("DeleteServer: %v", err)
	}
	s.gone(t, "server", func(ctx context.Context) (string, error) {
		got, err := s.cloud.GetServer(ctx, srv.ID)
		if err != nil {
			return "", err
		}
		return got.Status, nil
	}, "ACTIVE", "DELETED")
}

// csiMetadata is the metadata the Cinder CSI plugin gives the volume of a PVC.
func csiMetadata(cluster, pvc string) map[string]string {
	return map[string]string{"cinder.csi.openstack.org/cluster": cluster, "csi.storage.k8s.io/pvc/name": pvc,
		"csi.storage.k8s.io/pvc/namespace": "default"}
}

func (s *suite) volumes(t *testing.T) {
	if !s.env.BlockStorage {
		prereq.Missing(t, "the cloud under test has no Block Storage service")
	}
	ctx := t.Context()
	bc := s.client(t, openstack.ServiceBlockStorage)
	vname := name(t, "vol")
	cluster := name(t, "cluster")
	var ids []string
	for i := 0; i < 2; i++ {
		v, err := volumes.Create(ctx, bc, volumes.CreateOpts{Size: 1, Name: vname,
			Metadata: csiMetadata(cluster, fmt.Sprintf("data-%d", i))}, nil).Extract()
		if err != nil {
			t.Fatalf("create volume: %v", err)
		}
		cleanup(t, "volume "+v.ID, func(ctx context.Context) error {
			return volumes.Delete(ctx, bc, v.ID, volumes.DeleteOpts{Cascade: true}).ExtractErr()
		})
		ids = append(ids, v.ID)
	}
	for _, id := range ids {
		s.eventually(t, "volume available", func(ctx context.Context) (bool, error) {
			v, err := s.cloud.GetVolume(ctx, id)
			if err != nil {
				return false, err
			}
			if v.Status == "error" {
				return false, fmt.Errorf("volume %s in error", id)
			}
			return v.Status == "available", nil
		})
	}
	// The attachment API (microversion 3.27, cloudheal's read) answers a project member; a volume never
	// attached holds no attachment.
	as, err := s.cloud.ListVolumeAttachments(ctx)
	if err != nil {
		t.Fatalf("ListVolumeAttachments: %v", err)
	}
	for _, a := range as {
		if a.VolumeID == ids[0] || a.VolumeID == ids[1] {
			t.Fatalf("ListVolumeAttachments = %+v: an attachment of a volume never attached", a)
		}
	}
	v, err := s.cloud.GetVolume(ctx, ids[0])
	if err != nil || v.Name != vname || v.Size != 1 || v.Metadata["csi.storage.k8s.io/pvc/name"] != "data-0" ||
		v.Metadata["cinder.csi.openstack.org/cluster"] != cluster || v.Created.IsZero() {
		t.Fatalf("GetVolume = %+v, %v", v, err)
	}
	for _, size := range []int{0, 1} {
		list, err := s.cloud.ListVolumes(ctx, openstack.ListOpts{Name: vname, PageSize: size})
		if err != nil {
			t.Fatalf("ListVolumes(name, page size %d): %v", size, err)
		}
		got := make([]string, 0, len(list))
		for _, x := range list {
			got = append(got, x.ID)
		}
		if len(list) != 2 || len(missingIDs(ids, got)) > 0 {
			t.Fatalf("ListVolumes(name, page size %d) = %v; want %v", size, got, ids)
		}
		// A cluster's volumes are found by the CSI plugin's metadata (the cloud-side sweep).
		pages, err := volumes.List(bc, volumes.ListOpts{Metadata: map[string]string{"cinder.csi.openstack.org/cluster": cluster},
			Limit: size}).AllPages(ctx)
		if err != nil {
			t.Fatalf("list volumes by metadata (page size %d): %v", size, err)
		}
		vs, err := volumes.ExtractVolumes(pages)
		got = got[:0]
		for _, x := range vs {
			got = append(got, x.ID)
		}
		if err != nil || len(vs) != 2 || len(missingIDs(ids, got)) > 0 {
			t.Fatalf("list volumes by metadata (page size %d) = %v, %v; want %v", size, got, err, ids)
		}
	}

	// A snapshot holds its volume: refused without cascade, deleted with it.
	sn, err := snapshots.Create(ctx, bc, snapshots.CreateOpts{VolumeID: ids[0], Name: name(t, "snap")}).Extract()
	if err != nil {
		t.Fatalf("create snapshot: %v", err)
	}
	cleanup(t, "snapshot "+sn.ID, func(ctx context.Context) error { return snapshots.Delete(ctx, bc, sn.ID).ExtractErr() })
	getSnapshot := func(ctx context.Context) (string, error) {
		got, err := snapshots.Get(ctx, bc, sn.ID).Extract()
		if err != nil {
			return "", err
		}
		return got.Status, nil
	}
	s.eventually(t, "snapshot available", func(ctx context.Context) (bool, error) {
		st, err := getSnapshot(ctx)
		if st == "error" {
			return false, fmt.Errorf("snapshot %s in error", sn.ID)
		}
		return st == "available", err
	})
	if err := s.cloud.DeleteVolume(ctx, ids[0], false); !openstack.IsBadRequest(err) {
		t.Fatalf("DeleteVolume(with a snapshot, no cascade) = %v; want a refusal, 400 (deorbit leaves such a volume with the reason)", err)
	}
	getVolume := func(id string) func(ctx context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			got, err := s.cloud.GetVolume(ctx, id)
			if err != nil {
				return "", err
			}
			return got.Status, nil
		}
	}
	if err := s.cloud.DeleteVolume(ctx, ids[0], true); err != nil {
		t.Fatalf("DeleteVolume(cascade): %v", err)
	}
	s.gone(t, "volume", getVolume(ids[0]), "deleting")
	s.gone(t, "snapshot of a deleted volume", getSnapshot, "deleting")
	if err := s.cloud.DeleteVolume(ctx, ids[1], false); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	s.gone(t, "volume", getVolume(ids[1]), "deleting")
}

func (s *suite) loadBalancers(t *testing.T) {
	if !s.env.LoadBalancer {
		prereq.Missing(t, "the cloud under test has no Load Balancer service")
	}
	ctx := t.Context()
	lc := s.client(t, openstack.ServiceLoadBalancer)
	_, subnetID := s.network(t, "10.79.0.0/24")
	// Named and tagged as the OpenStack cloud controller manager does for Service default/web of a cluster.
	lname := "kube_service_" + name(t, "cluster") + "_default_web"
	tag := lname
	lb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: lname, VipSubnetID: subnetID,
		Tags: []string{tag, "kube_service"}}).Extract()
	if err != nil {
		t.Fatalf("create load balancer: %v", err)
	}
	cleanup(t, "load balancer "+lb.ID, func(ctx context.Context) error {
		err := loadbalancers.Delete(ctx, lc, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		if err != nil && !openstack.IsNotFound(err) {
			return err
		}
		// Wait for the VIP port to go, or the subnet cannot be deleted.
		for ctx.Err() == nil {
			if _, err := loadbalancers.Get(ctx, lc, lb.ID).Extract(); openstack.IsNotFound(err) {
				return nil
			}
			time.Sleep(s.env.Poll)
		}
		return ctx.Err()
	})
	waitActive := func() {
		s.eventually(t, "load balancer ACTIVE", func(ctx context.Context) (bool, error) {
			got, err := s.cloud.GetLoadBalancer(ctx, lb.ID)
			if err != nil {
				return false, err
			}
			if got.ProvisioningStatus == "ERROR" {
				return false, fmt.Errorf("load balancer %s in ERROR", lb.ID)
			}
			return got.ProvisioningStatus == "ACTIVE", nil
		})
	}
	waitActive()
	got, err := s.cloud.GetLoadBalancer(ctx, lb.ID)
	if err != nil || got.Name != lname || got.VIPAddress == "" || !slices.Contains(got.Tags, tag) {
		t.Fatalf("GetLoadBalancer = %+v, %v", got, err)
	}
	if _, err := listeners.Create(ctx, lc, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP,
		ProtocolPort: 6443, Name: name(t, "listener")}).Extract(); err != nil {
		t.Fatalf("create listener: %v", err)
	}
	waitActive()
	for _, o := range []openstack.ListOpts{{Name: lname}, {Name: lname, PageSize: 1}, {Tags: []string{tag}}, {Tags: []string{tag, "kube_service"}, PageSize: 1}} {
		list, err := s.cloud.ListLoadBalancers(ctx, o)
		if err != nil || len(list) != 1 || list[0].ID != lb.ID {
			t.Fatalf("ListLoadBalancers(%+v) = %+v, %v", o, list, err)
		}
	}
	if err := s.cloud.DeleteLoadBalancer(ctx, lb.ID, false); err == nil || openstack.IsNotFound(err) {
		t.Fatalf("DeleteLoadBalancer(with a listener, no cascade) = %v; want a refusal", err)
	}
	if err := s.cloud.DeleteLoadBalancer(ctx, lb.ID, true); err != nil {
		t.Fatalf("DeleteLoadBalancer(cascade): %v", err)
	}
	if err := s.cloud.DeleteLoadBalancer(ctx, lb.ID, true); !openstack.IsConflict(err) && !openstack.IsNotFound(err) {
		t.Fatalf("DeleteLoadBalancer while PENDING_DELETE = %v; want 409 (or 404 once gone)", err)
	}
	s.gone(t, "load balancer", func(ctx context.Context) (string, error) {
		got, err := s.cloud.GetLoadBalancer(ctx, lb.ID)
		if err != nil {
			return "", err
		}
		return got.ProvisioningStatus, nil
	}, "PENDING_DELETE")
	if list, err := s.cloud.ListLoadBalancers(ctx, openstack.ListOpts{Name: lname}); err != nil || len(list) != 0 {
		t.Fatalf("ListLoadBalancers(name) after deletion = %+v, %v; want none", list, err)
	}
}

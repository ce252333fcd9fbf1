package cloudsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/secgroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

func TestFaults(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	id, err := e.sim.AddFault(cloudsim.Fault{Service: "network", Method: "GET", Path: "/routers$", Status: 503, Times: 2, Skip: 1})
	if err != nil {
		t.Fatal(err)
	}
	list := func() error { _, err := routers.List(c.net, nil).AllPages(ctx); return err }
	if err := list(); err != nil {
		t.Fatalf("first call is skipped: %v", err)
	}
	for i := 0; i < 2; i++ {
		err := list()
		wantCode(t, "faulted list", err, 503)
		if !strings.Contains(body(err), "NeutronError") {
			t.Fatalf("fault body = %s", body(err))
		}
	}
	if err := list(); err != nil {
		t.Fatalf("after Times the fault is spent: %v", err)
	}
	fs := e.sim.Faults()
	if len(fs) != 1 || fs[0].ID != id || fs[0].Hits != 2 {
		t.Fatalf("faults = %+v", fs)
	}
	// A page fault only on marker= (page 2 and later).
	e.sim.ClearFaults()
	netID, _ := netSubnet(t, c, "10.3.0.0/24")
	for i := 0; i < 3; i++ {
		if _, err := ports.Create(ctx, c.net, ports.CreateOpts{NetworkID: netID}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.sim.AddFault(cloudsim.Fault{Service: "network", Path: "/ports$", Query: "marker=", Status: 500}); err != nil {
		t.Fatal(err)
	}
	_, err = ports.List(c.net, ports.ListOpts{Limit: 2}).AllPages(ctx)
	wantCode(t, "page 2 fails", err, 500)
	if _, err := ports.List(c.net, ports.ListOpts{}).AllPages(ctx); err != nil {
		t.Fatalf("unpaged list: %v", err)
	}
	if _, err := e.sim.AddFault(cloudsim.Fault{Status: 200}); err == nil {
		t.Fatal("a fault with status 200 was accepted")
	}
	if _, err := e.sim.AddFault(cloudsim.Fault{Path: "(", Status: 500}); err == nil {
		t.Fatal("a fault with a bad regexp was accepted")
	}
}

func TestSecurityGroupUpdateLatency(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	seeded, err := e.sim.SeedCluster(cloudsim.ClusterSeed{Project: "p1", Name: "k1", Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) { k.SecurityGroupUpdateLatency = cloudsim.Duration(30 * time.Second) }); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- secgroups.RemoveServer(t.Context(), c.compute, seeded.Nodes[0].ID, "default").ExtractErr()
	}()
	// The call waits on the simulator's clock.
	for !e.clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("call returned before the latency: %v", err)
	default:
	}
	e.clk.Step(30 * time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call still waiting after the latency")
	}
	s, err := servers.Get(t.Context(), c.compute, seeded.Nodes[0].ID).Extract()
	if err != nil || len(s.SecurityGroups) != 0 {
		t.Fatalf("server = %+v, %v; want no groups", s.SecurityGroups, err)
	}
}

func TestSeedCluster(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	sc, err := e.sim.SeedCluster(cloudsim.ClusterSeed{Project: "p1", Name: "k1", Nodes: 4, OrphanedRoutes: 3,
		ForeignRoutes: 2, Volumes: 2, LoadBalancers: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := routers.Get(t.Context(), c.net, sc.RouterID).Extract()
	if err != nil || len(r.Routes) != 9 {
		t.Fatalf("router = %+v, %v; want 9 routes", r, err)
	}
	ips := map[string]bool{}
	for _, n := range sc.Nodes {
		s, err := servers.Get(t.Context(), c.compute, n.ID).Extract()
		if err != nil || s.Status != "ACTIVE" {
			t.Fatalf("node %s = %+v, %v", n.Name, s, err)
		}
		ips[n.IP] = true
	}
	for _, rt := range sc.LiveRoutes {
		if !ips[rt.NextHop] {
			t.Errorf("live route %v does not point at a node", rt)
		}
	}
	for _, rt := range append(slices.Clone(sc.OrphanedRoutes), sc.ForeignRoutes...) {
		if ips[rt.NextHop] {
			t.Errorf("route %v points at a node", rt)
		}
	}
	if len(sc.Volumes) != 2 || len(sc.LoadBalancers) != 1 {
		t.Fatalf("seeded = %+v", sc)
	}
	if _, err := e.sim.SeedCluster(cloudsim.ClusterSeed{Project: "p1", Name: "big", NodeCIDR: "10.9.0.0/29", Nodes: 10}); err == nil {
		t.Fatal("a cluster larger than its node CIDR was seeded")
	}
}

func TestPersistAndDeterminism(t *testing.T) {
	build := func(path string) (*cloudsim.Sim, *cloudsim.SeededCluster) {
		sim, err := cloudsim.New(cloudsim.Options{Clock: clocktesting.NewFakeClock(t0), Seed: 7, StatePath: path})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "p", Name: "k", Nodes: 3, OrphanedRoutes: 1, Volumes: 1, LoadBalancers: 1})
		if err != nil {
			t.Fatal(err)
		}
		return sim, sc
	}
	dir := t.TempDir()
	a, sca := build(filepath.Join(dir, "a.json"))
	_, scb := build(filepath.Join(dir, "b.json"))
	if !reflect.DeepEqual(sca, scb) {
		t.Fatalf("the same seed gave different IDs:\n%+v\n%+v", sca, scb)
	}
	if err := a.Close(); err != nil { // saves
		t.Fatal(err)
	}
	b, err := cloudsim.New(cloudsim.Options{Clock: clocktesting.NewFakeClock(t0), Seed: 99, StatePath: filepath.Join(dir, "a.json")})
	if err != nil {
		t.Fatal(err)
	}
	if a.Stats() != b.Stats() {
		t.Fatalf("stats after reload = %+v, want %+v", b.Stats(), a.Stats())
	}
	ra, reva, _ := a.Router(sca.RouterID)
	rb, revb, ok := b.Router(sca.RouterID)
	if !ok || !slices.Equal(ra, rb) || reva != revb {
		t.Fatalf("router after reload = %v rev %d, want %v rev %d", rb, revb, ra, reva)
	}
	// The random source continues where it was: new IDs match a simulator that never stopped.
	p1 := a.CreateProject("next")
	p2 := b.CreateProject("next")
	if p1 != p2 {
		t.Fatalf("IDs after reload diverge: %s vs %s", p1, p2)
	}
}

func TestAdminHTTP(t *testing.T) {
	e := newEnv(t)
	do := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(t.Context(), method, e.url+path, bytes.NewBufferString(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, m := do("PATCH", "/_sim/knobs", `{"max_routes": 5, "volume_delete_latency": "45s"}`)
	if code != 200 || m["max_routes"] != 5.0 || m["volume_delete_latency"] != "45s" || m["token_ttl"] != "1h0m0s" {
		t.Fatalf("PATCH knobs = %d %v", code, m)
	}
	if k := e.sim.Knobs(); k.MaxRoutes != 5 || time.Duration(k.VolumeDeleteLatency) != 45*time.Second {
		t.Fatalf("knobs = %+v", k)
	}
	if code, _ := do("PATCH", "/_sim/knobs", `{"token_ttl": "-1s"}`); code != 400 {
		t.Fatalf("negative TTL: %d", code)
	}
	if code, _ := do("PATCH", "/_sim/knobs", `{"token_ttl": "soon"}`); code != 400 {
		t.Fatalf("bad duration: %d", code)
	}
	code, m = do("POST", "/_sim/faults", `{"service":"compute","path":"/servers","status":500,"times":1}`)
	if code != 201 || m["id"] == "" {
		t.Fatalf("POST fault = %d %v", code, m)
	}
	if code, _ := do("POST", "/_sim/faults", `{"service":"dns","status":500}`); code != 400 {
		t.Fatalf("bad service: %d", code)
	}
	if code, _ := do("DELETE", "/_sim/faults", ``); code != 204 || len(e.sim.Faults()) != 0 {
		t.Fatalf("DELETE faults: %d", code)
	}
	code, m = do("POST", "/_sim/clusters", `{"project":"p9","name":"k9","nodes":2,"orphaned_routes":1}`)
	if code != 201 || m["router_id"] == "" {
		t.Fatalf("POST cluster = %d %v", code, m)
	}
	if code, _ := do("POST", "/_sim/save", ``); code != 400 {
		t.Fatalf("save without a state path: %d", code)
	}
	if code, m := do("GET", "/_sim/stats", ``); code != 200 || m["Routers"] != 1.0 {
		t.Fatalf("stats = %d %v", code, m)
	}
}

func TestStartServesAndSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	sim, err := cloudsim.New(cloudsim.Options{Seed: 1, StatePath: path, SaveInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	pid := sim.CreateProject("p")
	mustUser(t, sim, "u", "pw", false, pid)
	pc, err := gcos.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: sim.AuthURL(), Username: "u",
		Password: "pw", DomainName: "Default", TenantName: "p"})
	if err != nil {
		t.Fatalf("authenticate against %s: %v", sim.AuthURL(), err)
	}
	c := newClients(t, pc)
	if _, err := routers.List(c.net, nil).AllPages(ctx); err != nil {
		t.Fatal(err)
	}
	// The periodic save writes the file while the simulator runs.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(pid)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("state not saved periodically")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := routers.List(c.net, nil).AllPages(ctx); err == nil {
		t.Fatal("the simulator still answers after Close")
	}
}

func TestFaultSlowThirdPage(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	netID, _ := netSubnet(t, c, "10.5.0.0/24")
	for i := 0; i < 5; i++ {
		if _, err := servers.Create(t.Context(), c.compute, servers.CreateOpts{Name: "s", FlavorRef: "1",
			Networks: []servers.Network{{UUID: netID}}}, nil).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.sim.AddFault(cloudsim.Fault{Service: "compute", Path: "/servers/detail$", Query: "marker=", Skip: 1,
		Latency: cloudsim.Duration(time.Minute), Times: 1}); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		p, err := servers.List(c.compute, servers.ListOpts{Limit: 2}).AllPages(t.Context())
		if err != nil {
			done <- -1
			return
		}
		ss, _ := servers.ExtractServers(p)
		done <- len(ss)
	}()
	for !e.clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if hits := e.sim.Faults()[0].Hits; hits != 1 {
		t.Fatalf("fault hits = %d while page 3 waits", hits)
	}
	e.clk.Step(time.Minute)
	select {
	case n := <-done:
		if n != 5 {
			t.Fatalf("listed %d servers after the slow page, want 5", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("list still waiting")
	}
}

package cloudsim_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/attachments"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/secgroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

func TestNovaServers(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) {
		k.ServerBuildLatency = cloudsim.Duration(5 * time.Second)
		k.ServerRebootLatency = cloudsim.Duration(10 * time.Second)
		k.ServerDeleteLatency = cloudsim.Duration(3 * time.Second)
	}); err != nil {
		t.Fatal(err)
	}
	netID, _ := netSubnet(t, c, "10.180.0.0/24")
	var ids []string
	for i := 0; i < 5; i++ {
		s, err := servers.Create(ctx, c.compute, servers.CreateOpts{Name: "node", FlavorRef: "1", ImageRef: "img",
			Networks: []servers.Network{{UUID: netID}}, Metadata: map[string]string{"i": "x"}}, nil).Extract()
		if err != nil {
			t.Fatalf("create server: %v", err)
		}
		ids = append(ids, s.ID)
	}
	s, err := servers.Get(ctx, c.compute, ids[0]).Extract()
	if err != nil || s.Status != "BUILD" || s.VmState != "building" {
		t.Fatalf("new server = %+v, %v; want BUILD", s, err)
	}
	e.clk.Step(5 * time.Second)
	s, err = servers.Get(ctx, c.compute, ids[0]).Extract()
	if err != nil || s.Status != "ACTIVE" || s.VmState != "active" || s.TenantID != e.p1 || s.Metadata["i"] != "x" {
		t.Fatalf("built server = %+v, %v", s, err)
	}
	addrs, ok := s.Addresses["n-10.180.0.0/24"].([]any)
	if !ok || len(addrs) != 1 || !strings.HasPrefix(addrs[0].(map[string]any)["addr"].(string), "10.180.0.") {
		t.Fatalf("addresses = %+v", s.Addresses)
	}
	if len(s.SecurityGroups) != 1 || s.SecurityGroups[0]["name"] != "default" {
		t.Fatalf("security groups = %+v", s.SecurityGroups)
	}
	// Paging of /servers/detail with limit.
	pages := 0
	var all []servers.Server
	err = servers.List(c.compute, servers.ListOpts{Limit: 2}).EachPage(ctx, func(_ ctxT, p pageT) (bool, error) {
		pages++
		ss, err := servers.ExtractServers(p)
		all = append(all, ss...)
		return true, err
	})
	if err != nil || len(all) != 5 || pages != 3 {
		t.Fatalf("paged %d servers in %d pages (%v), want 5 in 3", len(all), pages, err)
	}
	// Reboot: REBOOT until the latency passes; a soft reboot meanwhile is a conflict.
	if err := servers.Reboot(ctx, c.compute, ids[0], servers.RebootOpts{Type: servers.HardReboot}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if s, _ := servers.Get(ctx, c.compute, ids[0]).Extract(); s.Status != "HARD_REBOOT" {
		t.Fatalf("status after hard reboot = %s", s.Status)
	}
	e.clk.Step(10 * time.Second)
	if s, _ := servers.Get(ctx, c.compute, ids[0]).Extract(); s.Status != "ACTIVE" {
		t.Fatalf("status after reboot latency = %s", s.Status)
	}
	// Security groups by name.
	g, err := groups.Create(ctx, c.net, groups.CreateOpts{Name: "k8s"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := secgroups.AddServer(ctx, c.compute, ids[0], "k8s").ExtractErr(); err != nil {
		t.Fatalf("add security group: %v", err)
	}
	wantCode(t, "add it twice", secgroups.AddServer(ctx, c.compute, ids[0], "k8s").ExtractErr(), 400)
	wantCode(t, "add a missing group", secgroups.AddServer(ctx, c.compute, ids[0], "nope").ExtractErr(), 404)
	gp, err := secgroups.ListByServer(c.compute, ids[0]).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gs, _ := secgroups.ExtractSecurityGroups(gp)
	if len(gs) != 2 || !slices.ContainsFunc(gs, func(x secgroups.SecurityGroup) bool { return x.ID == g.ID }) {
		t.Fatalf("server groups = %+v", gs)
	}
	if err := secgroups.RemoveServer(ctx, c.compute, ids[0], "default").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if s, _ := servers.Get(ctx, c.compute, ids[0]).Extract(); len(s.SecurityGroups) != 1 || s.SecurityGroups[0]["name"] != "k8s" {
		t.Fatalf("groups after remove = %+v", s.SecurityGroups)
	}
	// all_tenants is admin-only; the admin sees every project.
	_, err = servers.List(c.compute, servers.ListOpts{AllTenants: true}).AllPages(ctx)
	wantCode(t, "member all_tenants", err, 403)
	a := e.adminClients(t)
	ap, err := servers.List(a.compute, servers.ListOpts{AllTenants: true, TenantID: e.p1}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if as, _ := servers.ExtractServers(ap); len(as) != 5 {
		t.Fatalf("admin all_tenants sees %d servers, want 5", len(as))
	}
	// Delete: gone after the delete latency, and its port with it.
	if err := servers.Delete(ctx, c.compute, ids[1]).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := servers.Get(ctx, c.compute, ids[1]).Extract(); err != nil {
		t.Fatalf("server gone before the delete latency: %v", err)
	}
	e.clk.Step(3 * time.Second)
	_, err = servers.Get(ctx, c.compute, ids[1]).Extract()
	wantCode(t, "get deleted server", err, 404)
	if !strings.Contains(body(err), "itemNotFound") {
		t.Fatalf("404 body = %s", body(err))
	}
	_, err = servers.Create(ctx, c.compute, servers.CreateOpts{Name: " ", FlavorRef: "1"}, nil).Extract()
	wantCode(t, "server without name", err, 400)
	wantCode(t, "bad reboot type", servers.Reboot(ctx, c.compute, ids[0], servers.RebootOpts{Type: "SOMETIMES"}).ExtractErr(), 400)
}

func TestCinderVolumes(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) {
		k.VolumeCreateLatency = cloudsim.Duration(2 * time.Second)
		k.VolumeDeleteLatency = cloudsim.Duration(30 * time.Second)
		k.StuckVolumes = []string{"stuck"}
	}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"a", "b", "stuck"} {
		v, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 1, Name: name,
			Metadata: map[string]string{"cinder.csi.openstack.org/cluster": "k1"}}, nil).Extract()
		if err != nil || v.Status != "creating" {
			t.Fatalf("create volume = %+v, %v", v, err)
		}
		ids = append(ids, v.ID)
	}
	wantCode(t, "delete a creating volume", volumes.Delete(ctx, c.volume, ids[0], nil).ExtractErr(), 400)
	e.clk.Step(2 * time.Second)
	v, err := volumes.Get(ctx, c.volume, ids[0]).Extract()
	if err != nil || v.Status != "available" || v.CreatedAt.IsZero() {
		t.Fatalf("volume = %+v, %v", v, err)
	}
	pages := 0
	err = volumes.List(c.volume, volumes.ListOpts{Limit: 1, Metadata: map[string]string{"cinder.csi.openstack.org/cluster": "k1"}}).EachPage(ctx,
		func(_ ctxT, p pageT) (bool, error) { pages++; return true, nil })
	if err != nil || pages != 3 {
		t.Fatalf("paged volumes in %d pages (%v), want 3 (the empty 4th page ends the pager)", pages, err)
	}
	for _, id := range ids {
		if err := volumes.Delete(ctx, c.volume, id, volumes.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if st, _ := e.sim.VolumeStatus(ids[0]); st != "deleting" {
		t.Fatalf("status after delete = %s", st)
	}
	e.clk.Step(30 * time.Second)
	_, err = volumes.Get(ctx, c.volume, ids[0]).Extract()
	wantCode(t, "get deleted volume", err, 404)
	// The stuck one stays in deleting, for ever.
	e.clk.Step(50 * time.Minute)
	v, err = volumes.Get(ctx, c.volume, ids[2]).Extract()
	if err != nil || v.Status != "deleting" {
		t.Fatalf("stuck volume = %+v, %v", v, err)
	}
	wantCode(t, "delete a deleting volume", volumes.Delete(ctx, c.volume, ids[2], nil).ExtractErr(), 400)
	_, err = volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 0}, nil).Extract()
	wantCode(t, "size 0", err, 400)
}

func TestOctaviaLoadBalancers(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	_, subnetID := netSubnet(t, c, "10.2.0.0/24")
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) { k.LBDeleteLatency = cloudsim.Duration(time.Second) }); err != nil {
		t.Fatal(err)
	}
	lb, err := loadbalancers.Create(ctx, c.lb, loadbalancers.CreateOpts{Name: "kube_service_k1_default_web", VipSubnetID: subnetID,
		Tags: []string{"kube_service_k1_default_web"}}).Extract()
	if err != nil || lb.ProvisioningStatus != "PENDING_CREATE" || lb.VipAddress == "" {
		t.Fatalf("create = %+v, %v", lb, err)
	}
	got, err := loadbalancers.Get(ctx, c.lb, lb.ID).Extract()
	if err != nil || got.ProvisioningStatus != "ACTIVE" || got.OperatingStatus != "ONLINE" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if _, err := listeners.Create(ctx, c.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}).Extract(); err != nil {
		t.Fatalf("create listener: %v", err)
	}
	pages, err := loadbalancers.List(c.lb, loadbalancers.ListOpts{Tags: []string{"kube_service_k1_default_web"}, Limit: 1}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := loadbalancers.ExtractLoadBalancers(pages); len(l) != 1 {
		t.Fatalf("list by tag = %d", len(l))
	}
	err = loadbalancers.Delete(ctx, c.lb, lb.ID, nil).ExtractErr()
	wantCode(t, "delete with children", err, 400)
	if !strings.Contains(body(err), "faultstring") {
		t.Fatalf("octavia error body = %s", body(err))
	}
	if err := loadbalancers.Delete(ctx, c.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "delete while PENDING_DELETE", loadbalancers.Delete(ctx, c.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(), 409)
	e.clk.Step(time.Second)
	_, err = loadbalancers.Get(ctx, c.lb, lb.ID).Extract()
	wantCode(t, "get deleted lb", err, 404)
	_, err = loadbalancers.Create(ctx, c.lb, loadbalancers.CreateOpts{Name: "novip"}).Extract()
	wantCode(t, "lb without vip", err, 400)
}

func TestCinderAttachments(t *testing.T) {
	e := newEnv(t)
	seeded, err := e.sim.Seed(cloudsim.SeedSpec{Projects: []cloudsim.ProjectSeed{{Name: "att",
		Users:   []cloudsim.UserSeed{{Name: "u2", Password: "pw2"}},
		Volumes: []cloudsim.VolumeSeed{{Name: "data", Size: 1, AttachedTo: "gone-server"}, {Name: "free", Size: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	vid := seeded.Projects["att"].Volumes["data"]
	c := newClients(t, e.provider(t, "u2", "pw2", "att"))
	ctx := t.Context()
	_, err = attachments.List(c.volume, attachments.ListOpts{}).AllPages(ctx)
	wantCode(t, "attachments below microversion 3.27", err, 404)
	c.volume.Microversion = "3.27"
	list := func() []attachments.Attachment {
		t.Helper()
		pages, err := attachments.List(c.volume, attachments.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatalf("list attachments: %v", err)
		}
		as, err := attachments.ExtractAttachments(pages)
		if err != nil {
			t.Fatalf("decode attachments: %v", err)
		}
		return as
	}
	if as := list(); len(as) != 1 || as[0].VolumeID != vid || as[0].Instance != "gone-server" || as[0].Status != "attached" {
		t.Fatalf("attachments = %+v; want the one of volume %s to gone-server", as, vid)
	}
	wantCode(t, "delete an unknown attachment", attachments.Delete(ctx, c.volume, "nope").ExtractErr(), 404)
	if err := attachments.Delete(ctx, c.volume, vid).ExtractErr(); err != nil {
		t.Fatalf("delete attachment: %v", err)
	}
	if as := list(); len(as) != 0 {
		t.Fatalf("attachments after the delete = %+v", as)
	}
	if v, err := volumes.Get(ctx, c.volume, vid).Extract(); err != nil || v.Status != "available" {
		t.Fatalf("volume after the delete = %+v, %v; want available", v, err)
	}
}

package cloudsim_test

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/snapshots"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/tags"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/errbody"
)

// wantErrBody fails unless err's body is the one package errbody gives style for its status and message (the
// table the fault proxy injects from).
func wantErrBody(t *testing.T, what string, err error, style errbody.Style) {
	t.Helper()
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		t.Fatalf("%s: err %v, want an HTTP error", what, err)
	}
	var got map[string]any
	if err := json.Unmarshal(ue.Body, &got); err != nil {
		t.Fatalf("%s: body %q is not JSON", what, ue.Body)
	}
	var msg string
	switch style {
	case errbody.Octavia:
		msg, _ = got["faultstring"].(string)
	default:
		for _, v := range got {
			if m, ok := v.(map[string]any); ok {
				msg, _ = m["message"].(string)
			}
		}
	}
	var want map[string]any
	_ = json.Unmarshal(errbody.JSON(style, ue.Actual, "", msg), &want)
	if msg == "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: body %s, want %s", what, ue.Body, errbody.JSON(style, ue.Actual, "", msg))
	}
}

// TestDeleteLatencyPerService: each service's delete takes its own knob's time on the simulator's clock, shows
// the service's in-between state meanwhile, then answers 404 with the body of the shared error table.
func TestDeleteLatencyPerService(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	netID, subnetID := netSubnet(t, c, "10.181.0.0/24")
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) {
		k.ServerDeleteLatency = cloudsim.Duration(3 * time.Second)
		k.VolumeDeleteLatency = cloudsim.Duration(2 * time.Second)
		k.LBDeleteLatency = cloudsim.Duration(5 * time.Second)
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := servers.Create(ctx, c.compute, servers.CreateOpts{Name: "n", FlavorRef: "1", ImageRef: "i",
		Networks: []servers.Network{{UUID: netID}}}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	vol, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 1, Name: "pv"}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	lb, err := loadbalancers.Create(ctx, c.lb, loadbalancers.CreateOpts{Name: "kube_service_k_ns_svc", VipSubnetID: subnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Step(time.Millisecond) // built, available, ACTIVE (zero latencies: at the next read)
	for _, tc := range []struct {
		name    string
		latency time.Duration
		del     func() error
		state   func() (string, error) // the in-between state
		want    string
		style   errbody.Style
	}{
		{"server", 3 * time.Second, func() error { return servers.Delete(ctx, c.compute, srv.ID).ExtractErr() },
			func() (string, error) {
				s, err := servers.Get(ctx, c.compute, srv.ID).Extract()
				if err != nil {
					return "", err
				}
				return s.TaskState, nil
			}, "deleting", errbody.Nova},
		{"volume", 2 * time.Second, func() error { return volumes.Delete(ctx, c.volume, vol.ID, nil).ExtractErr() },
			func() (string, error) {
				v, err := volumes.Get(ctx, c.volume, vol.ID).Extract()
				if err != nil {
					return "", err
				}
				return v.Status, nil
			}, "deleting", errbody.Nova},
		{"load balancer", 5 * time.Second, func() error {
			return loadbalancers.Delete(ctx, c.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		}, func() (string, error) {
			l, err := loadbalancers.Get(ctx, c.lb, lb.ID).Extract()
			if err != nil {
				return "", err
			}
			return l.ProvisioningStatus, nil
		}, "PENDING_DELETE", errbody.Octavia},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := e.clk.Now()
			if err := tc.del(); err != nil {
				t.Fatalf("delete: %v", err)
			}
			e.clk.SetTime(start.Add(tc.latency - time.Millisecond))
			if got, err := tc.state(); err != nil || got != tc.want {
				t.Fatalf("just before the latency: state %q, %v; want %q", got, err, tc.want)
			}
			e.clk.SetTime(start.Add(tc.latency))
			_, err := tc.state()
			wantCode(t, "after the latency", err, 404)
			wantErrBody(t, "after the latency", err, tc.style)
		})
	}
	if st := e.sim.Stats(); st.Ports != 0 {
		t.Fatalf("%d ports left; the server's and the VIP port go with them", st.Ports)
	}
}

// TestServerErrorTagsMetadata: an admin puts a server in vm_state error (os-resetState); it refuses a soft
// reboot, a hard reboot brings it back; tags and metadata change on their own.
func TestServerErrorTagsMetadata(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	a := e.adminClients(t)
	ctx := t.Context()
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) { k.ServerRebootLatency = cloudsim.Duration(4 * time.Second) }); err != nil {
		t.Fatal(err)
	}
	srv, err := servers.Create(ctx, c.compute, servers.CreateOpts{Name: "n", FlavorRef: "1", ImageRef: "i",
		Metadata: map[string]string{"a": "1"}}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Step(time.Millisecond)
	wantCode(t, "member resets state", servers.ResetState(ctx, c.compute, srv.ID, servers.StateError).ExtractErr(), 403)
	if err := servers.ResetState(ctx, a.compute, srv.ID, servers.StateError).ExtractErr(); err != nil {
		t.Fatalf("reset state: %v", err)
	}
	s, err := servers.Get(ctx, c.compute, srv.ID).Extract()
	if err != nil || s.Status != "ERROR" || s.VmState != "error" {
		t.Fatalf("after reset to error: %+v, %v", s, err)
	}
	err = servers.Reboot(ctx, c.compute, srv.ID, servers.RebootOpts{Type: servers.SoftReboot}).ExtractErr()
	wantCode(t, "soft reboot in error", err, 409)
	wantErrBody(t, "soft reboot in error", err, errbody.Nova)
	if err := servers.Reboot(ctx, c.compute, srv.ID, servers.RebootOpts{Type: servers.HardReboot}).ExtractErr(); err != nil {
		t.Fatalf("hard reboot in error: %v", err)
	}
	if s, err := servers.Get(ctx, c.compute, srv.ID).Extract(); err != nil || s.Status != "ERROR" || s.TaskState != "rebooting_hard" {
		t.Fatalf("during the hard reboot: %+v, %v; want ERROR, rebooting_hard", s, err)
	}
	e.clk.Step(4 * time.Second)
	if s, err := servers.Get(ctx, c.compute, srv.ID).Extract(); err != nil || s.Status != "ACTIVE" {
		t.Fatalf("after the hard reboot: %+v, %v", s, err)
	}

	for _, tag := range []string{"kube", "node"} {
		if err := tags.Add(ctx, c.compute, srv.ID, tag).ExtractErr(); err != nil {
			t.Fatalf("add tag: %v", err)
		}
	}
	if ok, err := tags.Check(ctx, c.compute, srv.ID, "kube").Extract(); err != nil || !ok {
		t.Fatalf("check tag = %v, %v", ok, err)
	}
	if err := tags.Delete(ctx, c.compute, srv.ID, "kube").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "delete a missing tag", tags.Delete(ctx, c.compute, srv.ID, "kube").ExtractErr(), 404)
	if got, err := tags.List(ctx, c.compute, srv.ID).Extract(); err != nil || !slices.Equal(got, []string{"node"}) {
		t.Fatalf("tags = %v, %v", got, err)
	}
	pages, err := servers.List(c.compute, servers.ListOpts{Tags: "node"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := servers.ExtractServers(pages); len(l) != 1 {
		t.Fatalf("list by tag: %d servers", len(l))
	}
	md, err := servers.UpdateMetadata(ctx, c.compute, srv.ID, servers.MetadataOpts{"b": "2"}).Extract()
	if err != nil || !maps.Equal(md, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("update metadata = %v, %v", md, err)
	}
	if md, err := servers.Metadata(ctx, c.compute, srv.ID).Extract(); err != nil || md["b"] != "2" {
		t.Fatalf("metadata = %v, %v", md, err)
	}
}

// TestCinderSnapshotsCascade: a volume with a snapshot goes only with cascade, and its snapshots with it, after
// the delete latency; a snapshot alone goes the same way.
func TestCinderSnapshotsCascade(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) {
		k.VolumeCreateLatency = cloudsim.Duration(time.Second)
		k.VolumeDeleteLatency = cloudsim.Duration(2 * time.Second)
	}); err != nil {
		t.Fatal(err)
	}
	vol, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 3, Name: "pv",
		Metadata: map[string]string{"cinder.csi.openstack.org/cluster": "k1"}}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	_, err = snapshots.Create(ctx, c.volume, snapshots.CreateOpts{VolumeID: vol.ID, Name: "early"}).Extract()
	wantCode(t, "snapshot of a creating volume", err, 400)
	e.clk.Step(time.Second)
	var snaps []string
	for _, name := range []string{"s1", "s2"} {
		sn, err := snapshots.Create(ctx, c.volume, snapshots.CreateOpts{VolumeID: vol.ID, Name: name}).Extract()
		if err != nil || sn.Status != "creating" || sn.Size != 3 {
			t.Fatalf("create snapshot = %+v, %v", sn, err)
		}
		snaps = append(snaps, sn.ID)
	}
	e.clk.Step(time.Second)
	pages, err := snapshots.ListDetail(c.volume, snapshots.ListOpts{VolumeID: vol.ID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := snapshots.ExtractSnapshots(pages); len(l) != 2 || l[0].Status != "available" || l[0].VolumeID != vol.ID {
		t.Fatalf("snapshots of the volume = %+v", l)
	}
	// One snapshot alone: deleting, then gone.
	if err := snapshots.Delete(ctx, c.volume, snaps[1]).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if sn, err := snapshots.Get(ctx, c.volume, snaps[1]).Extract(); err != nil || sn.Status != "deleting" {
		t.Fatalf("deleted snapshot = %+v, %v", sn, err)
	}
	e.clk.Step(2 * time.Second)
	_, err = snapshots.Get(ctx, c.volume, snaps[1]).Extract()
	wantCode(t, "deleted snapshot", err, 404)
	wantErrBody(t, "deleted snapshot", err, errbody.Nova)
	// The volume with the other: refused without cascade, both gone with it.
	err = volumes.Delete(ctx, c.volume, vol.ID, nil).ExtractErr()
	wantCode(t, "delete a volume with snapshots", err, 400)
	wantErrBody(t, "delete a volume with snapshots", err, errbody.Nova)
	if err := volumes.Delete(ctx, c.volume, vol.ID, volumes.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatalf("cascade delete: %v", err)
	}
	if sn, err := snapshots.Get(ctx, c.volume, snaps[0]).Extract(); err != nil || sn.Status != "deleting" {
		t.Fatalf("snapshot of the deleted volume = %+v, %v", sn, err)
	}
	e.clk.Step(2 * time.Second)
	_, err = volumes.Get(ctx, c.volume, vol.ID).Extract()
	wantCode(t, "cascaded volume", err, 404)
	_, err = snapshots.Get(ctx, c.volume, snaps[0]).Extract()
	wantCode(t, "snapshot of the cascaded volume", err, 404)
	if st := e.sim.Stats(); st.Volumes != 0 || st.Snapshots != 0 {
		t.Fatalf("left: %d volumes, %d snapshots", st.Volumes, st.Snapshots)
	}
}

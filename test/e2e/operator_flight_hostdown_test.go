package e2e

// A dead compute host is one failure: flight's node repair groups unhealthy nodes by Nova's per-project hostId.
// On the simulator, whose servers carry the hostId Nova computes (the contract suite holds real Nova to its
// form); the real cloud of the harness has one compute host, so a host's death is not shown on it.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/flight"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

// TestFlightNodesHostDownSim: six nodes on two compute hosts; the three of one host go NotReady together, with
// one node of the other host. The three are one host finding (NodesHealthy HostDown naming the host and the
// evacuation, status.flight.hostsDown, a Warning) and are never rebooted, however long it lasts; the storm rule
// counts the host once, so the other host's node is repaired as before (soft, then hard reboot). When the host's
// nodes are Ready again the finding ends.
func TestFlightNodesHostDownSim(t *testing.T) {
	parallel(t)
	f, _, seeded, conn := newFNSimFixtureOn(t, cloudsim.ClusterSeed{Project: "hostdown", Name: "hostdown", Nodes: 6, Hosts: 2}, nil)
	ctx := context.Background()
	names := map[string]string{} // server → Node
	host := map[string]string{}  // server → hostId
	for i, sn := range seeded.Nodes {
		sv, err := conn.GetServer(ctx, sn.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sv.HostID == "" {
			t.Fatalf("server %s has no hostId", sv.ID)
		}
		host[sv.ID] = sv.HostID
		names[sv.ID] = f.node(*sv, sn.IP, fmt.Sprintf("198.19.%d.0/24", i+1), condReady)
	}
	// nodes 0, 2, 4 on one host, 1, 3, 5 on the other (the simulator's spread)
	dead := []string{seeded.Nodes[0].ID, seeded.Nodes[2].ID, seeded.Nodes[4].ID}
	alone := seeded.Nodes[1].ID
	if host[dead[0]] != host[dead[1]] || host[dead[0]] != host[dead[2]] || host[dead[0]] == host[alone] {
		t.Fatalf("hostIds %v: want nodes 0, 2, 4 on one host, 1 on another", host)
	}
	f.synced()
	f.pass(time.Minute)
	unknown := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}
	for _, id := range append([]string{alone}, dead...) {
		f.setConditions(f.getNode(names[id]), unknown)
		f.seen(names[id], unknown)
	}
	reboots := func(id string) int { return actionsOf(t, conn, id)["reboot"] }

	cl := f.pass(time.Minute)
	c := condition(cl, v1alpha1.ConditionNodesHealthy)
	if c.Reason != flight.ReasonHostDown || !strings.Contains(c.Message, host[dead[0]][:12]) || !strings.Contains(c.Message, "host-evacuate") {
		t.Fatalf("NodesHealthy = %+v, want HostDown naming the host and the evacuation", c)
	}
	hd := cl.Status.Flight.HostsDown
	if len(hd) != 1 || hd[0].HostID != host[dead[0]] || strings.Join(hd[0].Servers, ",") != strings.Join(sorted(dead), ",") || cl.Status.Flight.Counts.HostsDown != 1 {
		t.Fatalf("status.flight.hostsDown %+v (count %d), want one finding of the three servers", hd, cl.Status.Flight.Counts.HostsDown)
	}
	since := hd[0].Since
	// Past the dwell and well past the whole ladder: the other host's node is soft- then hard-rebooted; no server
	// of the dead host ever is, and its finding keeps its first sighting.
	for range 4 {
		cl = f.pass(5 * time.Minute)
	}
	for range 3 {
		cl = f.pass(6 * time.Minute)
	}
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Reason == flight.ReasonTooManyUnhealthy {
		t.Fatalf("NodesHealthy = %+v: the storm rule counted the host's nodes one by one", c)
	}
	if n := reboots(alone); n < 2 {
		t.Errorf("the other host's NotReady node: %d reboots, want its soft and hard reboot", n)
	}
	for _, id := range dead {
		if n := reboots(id); n != 0 {
			t.Errorf("server %s on the dead host rebooted %d times, want none", id, n)
		}
	}
	if hd := cl.Status.Flight.HostsDown; len(hd) != 1 || !hd[0].Since.Equal(&since) {
		t.Errorf("status.flight.hostsDown %+v, want the one finding since %s", hd, since)
	}
	if !eventSeen(f.events, flight.ReasonHostDown) {
		t.Error("no HostDown Event")
	}
	// The host is back: the finding ends.
	for _, id := range dead {
		f.setConditions(f.getNode(names[id]), condReady)
		f.seen(names[id], condReady)
	}
	cl = f.pass(time.Minute)
	if hd := cl.Status.Flight.HostsDown; len(hd) != 0 || cl.Status.Flight.Counts.HostsDown != 0 {
		t.Errorf("the host is back: status.flight.hostsDown %+v, want none", hd)
	}
	for _, id := range dead {
		if n := reboots(id); n != 0 {
			t.Errorf("server %s rebooted %d times after its host came back, want none", id, n)
		}
	}
}

func sorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// TestFlightNodesHostDown: on real Nova with two compute hosts (the fake driver), two nodes whose servers run on
// compute-1 unreachable together while compute-2's node is Ready: Nova's hostId tells the hosts apart (the same
// for both servers of compute-1, another for compute-2's), the two are one host finding, and nothing is rebooted
// (none at the fault proxy) past the dwell and the whole ladder.
func TestFlightNodesHostDown(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg })
	a1, a2, b := f.serverOn(71, "compute-1"), f.serverOn(72, "compute-1"), f.serverOn(73, "compute-2")
	if a1.HostID == "" || a1.HostID != a2.HostID || a1.HostID == b.HostID {
		t.Fatalf("hostIds %q %q %q: want the two servers of compute-1 alike and compute-2's apart", a1.HostID, a2.HostID, b.HostID)
	}
	unknown := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}
	na1 := f.node(a1, f.net.IP(71), "198.19.71.0/24", condReady)
	na2 := f.node(a2, f.net.IP(72), "198.19.72.0/24", condReady)
	f.node(b, f.net.IP(73), "198.19.73.0/24", condReady)
	f.synced()
	f.pass(time.Minute)
	for _, n := range []string{na1, na2} {
		f.setConditions(f.getNode(n), unknown)
		f.seen(n, unknown)
	}
	cl := f.pass(time.Minute)
	for range 5 {
		cl = f.pass(5 * time.Minute)
	}
	c := condition(cl, v1alpha1.ConditionNodesHealthy)
	if c.Reason != flight.ReasonHostDown || !strings.Contains(c.Message, a1.HostID[:12]) {
		t.Fatalf("NodesHealthy = %+v, want HostDown naming hostId %s", c, a1.HostID[:12])
	}
	if hd := cl.Status.Flight.HostsDown; len(hd) != 1 || hd[0].HostID != a1.HostID || strings.Join(hd[0].Servers, ",") != strings.Join(sorted([]string{a1.ID, a2.ID}), ",") || hd[0].Zone == "" {
		t.Fatalf("status.flight.hostsDown %+v, want compute-1's finding of both servers, with its zone", hd)
	}
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Fatalf("servers of the dead host rebooted: %d soft, %d hard at the fault proxy", soft, hard)
	}
}

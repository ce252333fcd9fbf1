package e2e

import (
	"testing"
	"time"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
)

// TestFlightNodesAnswerLost: a soft reboot Nova takes while the connection is reset before its answer (the
// fault proxy, after the upstream) is counted as taken, as a process stopped there would be: the next passes
// send no second soft reboot, and the hard reboot follows after softRebootTimeout; one of each on the wire
// and in Nova's log.
func TestFlightNodesAnswerLost(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg })
	f.nova.Clear()
	if err := f.nova.Add(faultproxy.Rule{Name: "lost", Method: "POST", Body: `"SOFT"`, Fault: faultproxy.ResetAfterUpstream(), Times: 1},
		faultproxy.Rule{Name: "soft", Method: "POST", Body: `"SOFT"`, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: "hard", Method: "POST", Body: `"HARD"`, Fault: faultproxy.Pass()}); err != nil {
		t.Fatal(err)
	}
	sv := f.server(21)
	name := f.node(sv, f.net.IP(21), "198.19.21.0/24", condReady)
	f.pass(time.Minute)
	f.setConditions(f.getNode(name), condNotReady)
	f.pass(time.Minute)
	f.pass(6 * time.Minute) // past the dwell: observed
	cl := f.pass(time.Minute)
	if n := f.nova.Matched("lost"); n != 1 {
		t.Fatalf("soft reboots sent %d, want the one whose answer is lost; escalation %+v", n, escalation(cl, sv.ID))
	}
	if e := escalation(cl, sv.ID); e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseStarted {
		t.Fatalf("after the lost answer: escalation %+v, want the soft reboot counted as taken (started)", e)
	}
	f.waitStatus(sv.ID, "ACTIVE")
	// Within softRebootTimeout, and past the outage freeze the reset began (10m): no second soft reboot.
	for range 2 {
		f.pass(2 * time.Minute)
	}
	if soft := f.nova.Matched("lost") + f.nova.Matched("soft"); soft != 1 {
		t.Fatalf("%d soft reboots on the wire, want 1 (its answer lost, never sent again)", soft)
	}
	var hard int
	for range 5 {
		f.pass(2 * time.Minute)
		if hard = f.nova.Matched("hard"); hard > 0 {
			break
		}
	}
	if soft := f.nova.Matched("lost") + f.nova.Matched("soft"); hard != 1 || soft != 1 {
		t.Fatalf("after softRebootTimeout and the freeze: soft %d hard %d on the wire, want 1 1", soft, hard)
	}
	if n := f.novaReboots(sv.ID); n != 2 {
		t.Errorf("Nova's log holds %d reboots, want 2", n)
	}
}

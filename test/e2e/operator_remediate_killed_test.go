package e2e

// The Cluster API path's reboot, with the operator stopped between its record and Nova's answer: the state a
// killed process leaves (the status written ahead, the call not sent), and a call whose answer is lost on the
// wire (the fault proxy resets the connection after Nova took it). A new Reconciler stands for the restarted
// operator: nothing of the old one's memory is left.

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/remediate"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
)

// TestRemediateStoppedMidStep: a step recorded as started whose call never left is sent once by the restarted
// operator (Nova's log one reboot longer, one on the wire); a step Nova took whose answer was lost is found in
// Nova's log and counts as taken: nothing is sent again, and the hard reboot follows after softRebootTimeout.
func TestRemediateStoppedMidStep(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	ctx := context.Background()
	restart := func() {
		t.Helper()
		rec, err := remediate.New(f.deps, remediate.Options{Metrics: f.m})
		if err != nil {
			t.Fatal(err)
		}
		f.rec = rec
	}
	sent := func() int { return f.nova.Matched("lost") + f.nova.Matched("soft") + f.nova.Matched("hard") }

	// Killed after the record, before the call: the status as the process left it.
	id := f.server()
	m := f.machine(id)
	before := int32(f.reboots(id))
	var rem v1alpha1.VitalsRemediation
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(m), &rem); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(f.clock.Now())
	rem.Status = v1alpha1.VitalsRemediationStatus{Phase: v1alpha1.RemediationSoftRebootStarted, Server: id, LastStepTime: &at, RebootsBefore: ptr.To(before)}
	if err := f.c.Status().Update(ctx, &rem); err != nil {
		t.Fatal(err)
	}
	restart()
	got := f.reconcile(m, time.Second)
	f.want(got, v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if n := sent(); n != 1 {
		t.Fatalf("%d reboots on the wire after the restart, want the one that never left", n)
	}
	if n := f.reboots(id); n != int(before)+1 {
		t.Fatalf("Nova's log holds %d reboots, want %d", n, before+1)
	}
	if !eventSeen(f.events, remediate.ReasonStepNotSent) {
		t.Error("no StepNotSent Event")
	}

	// The answer lost after Nova took the call: the record stays started; the restarted operator reads Nova's
	// log, finds the reboot, and sends nothing again.
	f.nova.Clear()
	if err := f.nova.Add(faultproxy.Rule{Name: "lost", Method: "POST", Body: `"SOFT"`, Fault: faultproxy.ResetAfterUpstream(), Times: 1},
		faultproxy.Rule{Name: "soft", Method: "POST", Body: `"SOFT"`, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: "hard", Method: "POST", Body: `"HARD"`, Fault: faultproxy.Pass()}); err != nil {
		t.Fatal(err)
	}
	id2 := f.server()
	m2 := f.machine(id2)
	base := sent()
	got = f.reconcile(m2, time.Second)
	f.want(got, v1alpha1.RemediationSoftRebootStarted, remediate.ReasonRebootFailed)
	if got.Status.RebootsBefore == nil {
		t.Fatal("the record holds no count of Nova's reboots")
	}
	opEventually(t, time.Minute, "Nova's log shows the reboot whose answer was lost", func() (bool, string) {
		n := f.reboots(id2)
		return n == int(*got.Status.RebootsBefore)+1, fmt.Sprintf("reboots %d", n)
	})
	restart()
	got = f.reconcile(m2, time.Second)
	f.want(got, v1alpha1.RemediationSoftRebooted, remediate.ReasonStepConfirmed)
	if n := sent() - base; n != 1 {
		t.Fatalf("%d soft reboots on the wire for the second Machine, want 1 (its answer lost, never sent again)", n)
	}
	// counted as taken at its record's time: the hard reboot waits softRebootTimeout (5m) from it
	f.want(f.reconcile(m2, 4*time.Minute), v1alpha1.RemediationSoftRebooted, remediate.ReasonStepConfirmed)
	if n := f.nova.Matched("hard"); n != 0 {
		t.Fatalf("hard reboot sent %d times before softRebootTimeout", n)
	}
	// the lost answer was an outage the pass saw (the connection reset): the hard reboot waits out the freeze (10m)
	f.want(f.reconcile(m2, 7*time.Minute), v1alpha1.RemediationHardRebooted, remediate.ReasonRebooted)
	if n := f.nova.Matched("hard"); n != 1 {
		t.Fatalf("hard reboots on the wire %d, want 1", n)
	}
}

package remediation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
)

// TestUnreachable: which failed writes show their API unreachable.
func TestUnreachable(t *testing.T) {
	gr := schema.GroupResource{Resource: "nodes"}
	reset := &url.Error{Op: "Patch", URL: "https://10.0.0.1:6443/api/v1/nodes/n1",
		Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "connection reset", err: fmt.Errorf("cordon node n1: %w", reset), want: true},
		{name: "connection refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, want: true},
		{name: "a name that does not resolve", err: &net.DNSError{Err: "no such host", Name: "api.example"}, want: true},
		{name: "the write's time ran out", err: fmt.Errorf("reboot: %w", context.DeadlineExceeded), want: true},
		{name: "the connection cut mid-answer", err: io.ErrUnexpectedEOF, want: true},
		{name: "the API server not ready", err: apierrors.NewServiceUnavailable("etcd leader changed"), want: true},
		{name: "the API server timed out", err: apierrors.NewTimeoutError("request did not complete", 1), want: true},
		{name: "Nova behind a gateway with nothing behind it", err: fmt.Errorf("reboot: %w", gophercloud.ErrUnexpectedResponseCode{Actual: 503}), want: true},
		{name: "Nova's 500 is an answer", err: gophercloud.ErrUnexpectedResponseCode{Actual: 500}, want: false},
		{name: "a conflict", err: apierrors.NewConflict(gr, "n1", errors.New("changed")), want: false},
		{name: "forbidden", err: apierrors.NewForbidden(gr, "n1", errors.New("rbac")), want: false},
		{name: "a fence's refusal", err: &fencing.Error{Reason: fencing.ReasonPaused, Message: "paused"}, want: false},
		{name: "the operator stopping", err: context.Canceled, want: false},
		{name: "cut short by the replica's fenced validity", err: fmt.Errorf("delete: %w", &fencing.CutError{Err: context.DeadlineExceeded, Cut: &fencing.Cut{Validity: true, After: time.Second}}), want: false},
		{name: "cut short by the write timeout", err: fmt.Errorf("delete: %w", &fencing.CutError{Err: context.DeadlineExceeded, Cut: &fencing.Cut{After: 5 * time.Second}}), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unreachable(tc.err); got != tc.want {
				t.Errorf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestOutageSeenDuringThePass: an outage that shows itself after the pass began (the workload API stops
// between the pass's read and its write) freezes the pass's later disruptive and destructive actions, at
// Ask and at the write, and the next passes' as an outage seen at Begin does; safe actions and a teardown
// go on. Seen either by a write of the pass (Done with an unreachable error) or by a check the pass needs.
func TestOutageSeenDuringThePass(t *testing.T) {
	unreachable := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name string
		// during runs after the first reboot was allowed
		during func(v *env, p Pass, first Action)
		frozen bool
		why    string // in the status's lastOutageReason when frozen
	}{
		{name: "a write finds the API unreachable", frozen: true, why: "RebootServer server s1: the write found its API unreachable",
			during: func(_ *env, p Pass, first Action) { p.Done(context.Background(), first, unreachable) }},
		{name: "a check the pass needs fails", frozen: true, why: "cluster check cloud failed: connection refused",
			during: func(v *env, _ Pass, _ Action) { v.checks.Set(key1, CheckCloud, errors.New("connection refused")) }},
		{name: "a conflict is an answer", frozen: false,
			during: func(_ *env, p Pass, first Action) {
				p.Done(context.Background(), first, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("changed")))
			}},
		{name: "a teardown's failed delete is not the pass's to judge", frozen: false,
			during: func(_ *env, p Pass, _ Action) {
				a := teardown("198.19.9.0/24")
				if d := p.Ask(context.Background(), a); d.Outcome != Allowed {
					t.Fatalf("teardown asked: %s", d.Reason)
				}
				p.Done(context.Background(), a, unreachable)
			}},
		{name: "a check that is not an outage", frozen: false,
			during: func(v *env, _ Pass, _ Action) { v.checks.Set(key1, CheckCloud, notConfigured{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(func(c *v1alpha1.VitalsCluster) {
				c.UID = "u1"
				c.Spec.Remediation.MaxUnhealthy = new(intstr.FromString("100%"))
			})
			v := fenceEnv(t, nil, nil, &liveCluster{c: c.DeepCopy()})
			ctx := context.Background()
			p := v.e.Begin(ctx, c, "flight", []string{CheckCloud}, Scope{})
			first, second := reboot("s1", ""), reboot("s2", "")
			for _, a := range []Action{first, second} {
				if d := p.Ask(ctx, a); d.Outcome != Allowed {
					t.Fatalf("%s before the outage: %s %s", a.ID, d.Reason, d.Message)
				}
			}
			tc.during(v, p, first)

			// second was allowed before the outage: its write is refused at the fence
			_, cancel, err := fencing.Enter(fencing.With(ctx, p.Fence(second)))
			if r, _ := fencing.ReasonOf(err); (r == fencing.ReasonFrozen) != tc.frozen {
				t.Errorf("the write of an action allowed before: %v, frozen want %v", err, tc.frozen)
			}
			if err == nil {
				cancel()
			}
			// a third disruptive action of the same pass is held at Ask (the check passes again: the freeze
			// holds it, not the gate); a safe one is not
			v.checks.Set(key1, CheckCloud, nil)
			if d := p.Ask(ctx, reboot("s3", "")); (d.Reason == ReasonFrozen) != tc.frozen {
				t.Errorf("a disruptive action after: %s %s, frozen want %v", d.Reason, d.Message, tc.frozen)
			}
			if d := p.Ask(ctx, safeRule(0)); d.Outcome != Allowed {
				t.Errorf("a safe action after: %s %s", d.Reason, d.Message)
			}
			if _, cancel, err := fencing.Enter(fencing.With(ctx, p.Fence(safeRule(0)))); err != nil {
				t.Errorf("the write of a safe action: %v", err)
			} else {
				cancel()
			}
			p.Apply(&c.Status)
			st := c.Status.Remediation
			if got := st != nil && st.LastOutage != nil; got != tc.frozen {
				t.Fatalf("status.remediation.lastOutage set %v, want %v: %+v", got, tc.frozen, st)
			}
			if tc.frozen && !strings.Contains(st.LastOutageReason, tc.why) {
				t.Errorf("lastOutageReason %q, want it to say %q", st.LastOutageReason, tc.why)
			}
			// the next pass, a minute on, is frozen too, and its timers restart
			v.clock.Step(time.Minute)
			q := v.e.Begin(ctx, c, "flight", []string{CheckCloud}, Scope{})
			if d := q.Ask(ctx, reboot("s4", "")); (d.Reason == ReasonFrozen) != tc.frozen {
				t.Errorf("the next pass: %s %s, frozen want %v", d.Reason, d.Message, tc.frozen)
			}
			if o := q.Outage(); o.Last.IsZero() == tc.frozen {
				t.Errorf("the next pass's Outage %+v, frozen want %v", o, tc.frozen)
			}
		})
	}
}

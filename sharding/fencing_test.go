package sharding_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/sharding"
)

// TestFencing drives two replicas' rounds by hand, with a fake clock, against the real API server: at no
// step do both hold (act on) one UID, and ranges move only after a release or an expiry.
func TestFencing(t *testing.T) {
	const (
		lease  = 15 * time.Second
		renew  = 5 * time.Second
		margin = 5 * time.Second
	)
	type step struct {
		advance time.Duration // the clock moves first
		rounds  string        // then these replicas run a round, in order ("a", "b", "ab", "ba")
		// wantA and wantB: how many of the 4 ranges each acts on after the step
		wantA, wantB int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "renewals keep the ranges", steps: []step{
			{0, "a", 4, 0}, {renew, "a", 4, 0}, {renew, "a", 4, 0}, {renew, "a", 4, 0}, {renew, "a", 4, 0},
		}},
		{name: "a joining replica waits for the release", steps: []step{
			{0, "a", 4, 0},
			{time.Second, "b", 4, 0}, // b is a member; every range is a's, unexpired
			{time.Second, "a", 2, 0}, // a sees b: gives two up at once (stops acting), releases later
			{time.Second, "b", 2, 0}, // not released yet: b waits
			{margin, "a", 2, 0},      // a writes the releases
			{0, "b", 2, 2},           // b takes them
			{renew, "ab", 2, 2},
		}},
		{name: "a crashed replica fences itself before the others take over", steps: []step{
			{0, "a", 4, 0},
			{0, "b", 4, 0},
			// a stops: no more rounds of a. Its validity ends at lease - margin after its last renewal...
			{lease - margin - time.Second, "b", 4, 0},
			{time.Second, "b", 0, 0}, // ...a acts no more; its Leases are not expired yet: b waits
			{margin - time.Second, "b", 0, 0},
			{time.Second, "b", 0, 4}, // unchanged for a lease duration: b takes every range
		}},
		{name: "a replica cut off from the API server stops acting on its own", steps: []step{
			{0, "a", 4, 0},
			{lease - margin, "", 0, 0}, // no round ran: the validity ran out all the same
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			replica := fourRanges(t, "fence", clk, lease, renew, margin)
			rs := map[string]*sharding.Coordinator{"a": replica("a"), "b": replica("b")}
			uids := make([]types.UID, 200)
			for i := range uids {
				uids[i] = types.UID("uid-" + strconv.Itoa(i))
			}
			ctx := context.Background()
			for k, s := range tc.steps {
				clk.Step(s.advance)
				for _, r := range s.rounds {
					rs[string(r)].Round(ctx)
				}
				if got := acting(rs["a"]); got != s.wantA {
					t.Errorf("step %d: a acts on %d ranges, want %d", k, got, s.wantA)
				}
				if got := acting(rs["b"]); got != s.wantB {
					t.Errorf("step %d: b acts on %d ranges, want %d", k, got, s.wantB)
				}
				for _, u := range uids {
					if rs["a"].Holds(u) && rs["b"].Holds(u) {
						t.Fatalf("step %d: both replicas act on uid %s", k, u)
					}
				}
			}
		})
	}
}

// acting counts the ranges c acts on now (held and within their fenced validity).
// fourRanges returns a constructor of the replicas of set name, on 4 ranges, in a namespace of their own
// of the real API server, on clk.
func fourRanges(t *testing.T, name string, clk clock.WithTicker, lease, renew, margin time.Duration) func(id string) *sharding.Coordinator {
	ns, cs, _ := newNamespace(t, testenv.Kube(t))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return func(id string) *sharding.Coordinator {
		c, err := sharding.New(sharding.Options{Leases: cs.CoordinationV1(), Namespace: ns, Name: name, Identity: id,
			Ranges: 4, LeaseDuration: lease, RenewInterval: renew, SafetyMargin: margin, Clock: clk, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

func acting(c *sharding.Coordinator) int {
	n := 0
	sp := c.Space()
	for i := range sp.Len() {
		if c.Holds(uidIn(sp, i)) {
			n++
		}
	}
	return n
}

// uidIn finds a UID whose hash falls in range i.
func uidIn(sp sharding.Space, i int) types.UID {
	for k := 0; ; k++ {
		u := types.UID("probe-" + strconv.Itoa(k))
		if sp.Of(u) == i {
			return u
		}
	}
}

// TestDetail: the readiness detail names the ranges a replica holds and the members it saw, and follows
// a hand-over.
func TestDetail(t *testing.T) {
	const (
		lease  = 15 * time.Second
		renew  = 5 * time.Second
		margin = 5 * time.Second
	)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	replica := fourRanges(t, "detail", clk, lease, renew, margin)
	a, b := replica("a"), replica("b")
	if got, want := a.Detail(), "holds none; 0 members"; got != want {
		t.Errorf("before a round: %q, want %q", got, want)
	}
	ctx := context.Background()
	steps := []struct {
		advance      time.Duration
		rounds       []*sharding.Coordinator
		wantA, wantB string
	}{
		{0, []*sharding.Coordinator{a}, "holds 4 of 4: 0,1,2,3; 1 members", "holds none; 0 members"},
		{time.Second, []*sharding.Coordinator{b, a}, "holds 2 of 4: 0,1; 2 members", "holds none; 2 members"},
		{margin, []*sharding.Coordinator{a, b}, "holds 2 of 4: 0,1; 2 members", "holds 2 of 4: 2,3; 2 members"},
	}
	for k, s := range steps {
		clk.Step(s.advance)
		for _, r := range s.rounds {
			r.Round(ctx)
		}
		if got := a.Detail(); got != s.wantA {
			t.Errorf("step %d: a: %q, want %q", k, got, s.wantA)
		}
		if got := b.Detail(); got != s.wantB {
			t.Errorf("step %d: b: %q, want %q", k, got, s.wantB)
		}
	}
}

// TestRenewalsOutliveAFailingList: while the API server fails the list of the set's Leases (as a loaded
// one times it out), a replica renews the ranges it holds all the same, from the Leases it last wrote,
// and keeps acting on them: a lapse would make its informers list every cluster again, loading the API
// server more (the 10,000-cluster bench). The real API server, behind the fault proxy.
func TestRenewalsOutliveAFailingList(t *testing.T) {
	const (
		lease  = 15 * time.Second
		renew  = 5 * time.Second
		margin = 5 * time.Second
	)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, p, ns := proxiedReplica(t, "slow", clk, lease, renew, margin)
	ctx := context.Background()
	a.Round(ctx)
	if got := acting(a); got != 4 {
		t.Fatalf("after the first round: acts on %d ranges, want 4", got)
	}
	if err := p.Add(faultproxy.Rule{Name: "list", Method: "GET", Path: "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases",
		Fault: faultproxy.Status(503, faultproxy.StyleKube, "the server is currently unable to handle the request")}); err != nil {
		t.Fatal(err)
	}
	for k := range 6 { // 30 s: three times the fenced validity (lease - margin)
		clk.Step(renew)
		a.Round(ctx)
		if got := acting(a); got != 4 {
			t.Fatalf("round %d with the list failing: acts on %d ranges, want 4", k, got)
		}
	}
	if p.Count("list") == 0 {
		t.Fatal("the list was never failed")
	}
}

// TestRenewalsOutliveAHangingList: while the list of the set's Leases hangs (a loaded API server that
// answers neither yes nor no), Start's renewals go on at their own interval and the replica keeps acting
// on its ranges: the assignment's list no longer holds the renewals back until the fenced validity ran
// out (the 10,000-cluster bench at four and eight replicas). The real API server, behind the fault proxy;
// the replica's clock is a fake one, moved one renew interval at a time once the renewals of the last
// interval arrived.
func TestRenewalsOutliveAHangingList(t *testing.T) {
	// A list bounded by the fenced validity (lease - margin) hangs for longer than the test waits for any
	// renewal: the renewals must come while it hangs, not after it.
	const (
		lease  = 10 * time.Minute
		renew  = 100 * time.Second
		margin = 100 * time.Second
	)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, p, ns := proxiedReplica(t, "hang", clk, lease, renew, margin)
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	if err := p.Add(faultproxy.Rule{Name: "writes", Method: "PUT", Path: leases + "/*", Fault: faultproxy.Pass()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		for { // leave waits a safety margin on the fake clock before its releases
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
				clk.Step(margin)
			}
		}
	})
	// Start writes the membership, then assigns a renew interval later
	waitFor(t, "both loops waiting on the clock", func() bool { return clk.Waiters() == 2 })
	if got := acting(a); got != 0 {
		t.Fatalf("before the first assignment: acts on %d ranges, want 0", got)
	}
	clk.Step(renew)
	waitFor(t, "the first assignment's 4 ranges", func() bool { return acting(a) == 4 })
	// the round's list hangs from now on, for longer than the test
	if err := p.Add(faultproxy.Rule{Name: "list", Method: "GET", Path: leases, Fault: faultproxy.Delay(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for k := range 18 { // 1800 s: more than three times the fenced validity
		before := p.Matched("writes")
		// the renewals' loop waits on its ticker; the assignment's hangs in the list
		waitFor(t, "the renewals waiting on the clock", func() bool { return clk.Waiters() >= 1 })
		clk.Step(renew)
		// the 4 range renewals and the membership's renewal of this interval
		waitFor(t, fmt.Sprintf("interval %d's renewals", k), func() bool { return p.Matched("writes") >= before+5 })
		if got := acting(a); got != 4 {
			t.Fatalf("interval %d with the list hanging: acts on %d ranges, want 4", k, got)
		}
	}
	if p.Matched("list") == 0 {
		t.Fatal("the list was never held")
	}
}

// proxiedReplica returns replica "a" of set name, on 4 ranges and clk, in a namespace of its own of the
// real API server, reached through the fault proxy it also returns.
func proxiedReplica(t *testing.T, name string, clk clock.WithTicker, lease, renew, margin time.Duration) (*sharding.Coordinator, *faultproxy.Proxy, string) {
	t.Helper()
	cfg := testenv.Kube(t)
	p, pcfg, err := faultproxy.NewKube(cfg, faultproxy.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ns, _, _ := newNamespace(t, cfg)
	cs, err := kclient.NewForConfig(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sharding.New(sharding.Options{Leases: cs.CoordinationV1(), Namespace: ns, Name: name, Identity: "a",
		Ranges: 4, LeaseDuration: lease, RenewInterval: renew, SafetyMargin: margin, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a, p, ns
}

// waitFor polls cond until it holds, for at most a minute of real time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

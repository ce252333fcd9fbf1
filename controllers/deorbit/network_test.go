package deorbit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// memNet is the Neutron side of memCloud: ports and floating IPs, deleted at once (as Neutron does); a
// deleted port takes its floating IPs off. A load balancer's delete leaves its VIP port (as an Octavia
// that failed to deallocate it would), for the sweep to find.
type memNet struct {
	ports map[string]*openstack.Port
	fips  map[string]*openstack.FloatingIP
	// failLists: the next n lists of floating IPs fail.
	failLists int
	// afterList, when set, changes the floating IPs after a list answered (once).
	afterList func(*memNet)
}

func (m *memCloud) withNet() *memNet {
	m.net = &memNet{ports: map[string]*openstack.Port{}, fips: map[string]*openstack.FloatingIP{}}
	return m.net
}

func (m *memCloud) ListPorts(ctx context.Context, o openstack.ListOpts) ([]openstack.Port, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []openstack.Port
	if m.net != nil {
		for _, p := range m.net.ports {
			if o.DeviceOwner == "" || p.DeviceOwner == o.DeviceOwner {
				out = append(out, *p)
			}
		}
	}
	return out, nil
}

func (m *memCloud) GetPort(ctx context.Context, id string) (*openstack.Port, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.net == nil || m.net.ports[id] == nil {
		return nil, errNotFound
	}
	c := *m.net.ports[id]
	return &c, nil
}

func (m *memCloud) SetAllowedAddressPairs(context.Context, string, int, []openstack.AddressPair) (*openstack.Port, error) {
	return nil, errors.New("not used by deorbit")
}

func (m *memCloud) DeletePort(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failDeletes[id] > 0 {
		m.failDeletes[id]--
		return err500
	}
	if m.net == nil || m.net.ports[id] == nil {
		return errNotFound
	}
	m.deletes[id]++
	delete(m.net.ports, id)
	for _, f := range m.net.fips {
		if f.PortID == id {
			f.PortID, f.FixedIP = "", ""
		}
	}
	return nil
}

func (m *memCloud) ListFloatingIPs(ctx context.Context, o openstack.ListOpts) ([]openstack.FloatingIP, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []openstack.FloatingIP
	if m.net != nil {
		if m.net.failLists > 0 {
			m.net.failLists--
			return nil, err500
		}
		for _, f := range m.net.fips {
			out = append(out, *f)
		}
		if after := m.net.afterList; after != nil {
			m.net.afterList = nil
			after(m.net)
		}
	}
	return out, nil
}

func (m *memCloud) GetFloatingIP(ctx context.Context, id string) (*openstack.FloatingIP, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.net == nil || m.net.fips[id] == nil {
		return nil, errNotFound
	}
	c := *m.net.fips[id]
	return &c, nil
}

func (m *memCloud) DeleteFloatingIP(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.net == nil || m.net.fips[id] == nil {
		return errNotFound
	}
	m.deletes[id]++
	delete(m.net.fips, id)
	return nil
}

func vipPort(id, lbID string) *openstack.Port {
	return &openstack.Port{ID: id, Name: ccm.VIPPortName(lbID), DeviceID: "lb-" + lbID, DeviceOwner: ccm.OctaviaOwner, Status: "DOWN"}
}

// netFixture adds to fixture's cluster c1 what Octavia and the cloud controller manager leave in
// Neutron, and what looks like it but is not the cluster's:
//   - p-web, p-orphan: the VIP ports of c1's load balancers lb-web (its Service's) and lb-orphan (tagged);
//   - f-web on p-web, f-loose on nothing: c1's floating IPs by the cloud controller manager's description;
//   - p-sub, the VIP port of lb-sub (cluster c1_b), and p-forged, named as the VIP port of a load balancer
//     "lb-gone" that the cluster never had: never deleted;
//   - f-other (cluster c1-other's), f-server (c1's description, but on a server's port, as when another
//     cluster's Service was given the address): never deleted.
func netFixture(c *memCloud) {
	n := c.withNet()
	c.lbs["lb-web"].VIPPortID = "p-web"
	c.lbs["lb-orphan"].VIPPortID = "p-orphan"
	c.lbs["lb-sub"].VIPPortID = "p-sub"
	for _, p := range []*openstack.Port{vipPort("p-web", "lb-web"), vipPort("p-orphan", "lb-orphan"), vipPort("p-sub", "lb-sub"), vipPort("p-forged", "lb-gone"),
		{ID: "p-server", Name: "node-1", DeviceID: "srv-1", DeviceOwner: "compute:nova"}} {
		n.ports[p.ID] = p
	}
	for _, f := range []*openstack.FloatingIP{
		{ID: "f-web", Address: "203.0.113.10", PortID: "p-web", Description: ccm.FloatingIPDescription("c1", "app", "web")},
		{ID: "f-loose", Address: "203.0.113.11", Description: ccm.FloatingIPDescription("c1", "app", "gone")},
		{ID: "f-other", Address: "203.0.113.12", Description: ccm.FloatingIPDescription("c1-other", "app", "web")},
		{ID: "f-server", Address: "203.0.113.13", PortID: "p-server", Description: ccm.FloatingIPDescription("c1", "app", "old")},
	} {
		f.Status = "DOWN"
		n.fips[f.ID] = f
	}
}

// The sweep deletes the VIP ports of the cluster's load balancers once these are gone and the cluster's
// floating IPs, each asked of the policy and counted; nothing that only looks like the cluster's.
func TestSweepNetwork(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ours := []string{"p-web", "p-orphan", "f-web", "f-loose"}
	theirs := []string{"p-sub", "p-forged", "p-server", "f-other", "f-server"}
	for _, tc := range []struct {
		name        string
		setup       func(*memCloud, *Input, *asker)
		mutate      func(*memCloud, int)
		wantPhase   string
		wantDeleted []string
		wantKept    []string
		wantDebris  []string
		check       func(*testing.T, *memCloud, *v1alpha1.DeorbitStatus, *asker, *Metrics)
	}{
		{
			name:      "the cluster's ports and floating IPs go, nothing else",
			wantPhase: v1alpha1.DeorbitPhaseDone, wantDeleted: ours, wantKept: theirs,
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				for _, v := range []string{VerbDeletePort + " p-web", VerbDeletePort + " p-orphan", VerbDeleteFloatingIP + " f-web", VerbDeleteFloatingIP + " f-loose"} {
					if a.asked[v] != 1 || a.done[v] != 1 {
						t.Errorf("%s: asked %d, done %d; want once each", v, a.asked[v], a.done[v])
					}
				}
				if s := state(st, v1alpha1.DeorbitFloatingIP, "f-server"); s != v1alpha1.DeorbitKept {
					t.Errorf("f-server state %s, want Kept", s)
				}
				for _, typ := range []string{v1alpha1.DeorbitPort, v1alpha1.DeorbitFloatingIP} {
					if got := testutil.ToFloat64(m.Deletes.WithLabelValues(typ, OutcomeDeleted)); got != 2 {
						t.Errorf("vitals_deorbit_deletes_total{type=%s,outcome=deleted} = %v, want 2", typ, got)
					}
				}
				if state(st, v1alpha1.DeorbitPort, "p-forged") != "(untracked)" || state(st, v1alpha1.DeorbitFloatingIP, "f-other") != "(untracked)" {
					t.Errorf("a port or floating IP not the cluster's was tracked: %+v", st.Resources)
				}
			},
		},
		{
			// Whoever writes the workload cluster can annotate a Service with any load balancer's ID:
			// deorbit waits on it, but its VIP port is never the cluster's, even once it is gone.
			name: "a Service annotated with another cluster's load balancer",
			setup: func(c *memCloud, in *Input, a *asker) {
				if err := in.Workload.Create(context.Background(), lbService("app", "evil", "lb-sub")); err != nil {
					panic(err)
				}
			},
			mutate: func(c *memCloud, i int) {
				if i == 2 {
					c.mu.Lock()
					delete(c.lbs, "lb-sub") // its own cluster's deorbit deleted it; Octavia left p-sub
					c.mu.Unlock()
				}
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantDeleted: ours, wantKept: theirs,
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				if s := state(st, v1alpha1.DeorbitPort, "p-sub"); s != "(untracked)" {
					t.Errorf("p-sub, the VIP port of another cluster's load balancer, is tracked: %s", s)
				}
				if _, ok := c.net.ports["p-sub"]; !ok {
					t.Errorf("p-sub was deleted")
				}
			},
		},
		{
			name: "a floating IP put on a server's port between the list and the delete: kept",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.net.afterList = func(n *memNet) { n.fips["f-loose"].PortID = "p-server" }
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantDeleted: []string{"p-web", "p-orphan", "f-web"}, wantKept: append([]string{"f-loose"}, theirs...),
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				if s := state(st, v1alpha1.DeorbitFloatingIP, "f-loose"); s != v1alpha1.DeorbitKept {
					t.Errorf("f-loose state %s, want Kept", s)
				}
			},
		},
		{
			name:      "dry run: the plan lists the ports and floating IPs",
			setup:     func(c *memCloud, in *Input, a *asker) { a.outcome = remediation.DryRun },
			wantPhase: v1alpha1.DeorbitPhaseDryRunPlanned, wantKept: append(ours, theirs...),
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				// The load balancers are not deleted in a dry run: their VIP ports wait on them; the
				// floating IPs are planned.
				for _, want := range [][2]string{{v1alpha1.DeorbitFloatingIP, "f-web"}, {v1alpha1.DeorbitFloatingIP, "f-loose"}} {
					if s := state(st, want[0], want[1]); s != v1alpha1.DeorbitWouldDelete {
						t.Errorf("%s %s: state %s, want WouldDelete", want[0], want[1], s)
					}
				}
				if s := state(st, v1alpha1.DeorbitPort, "p-orphan"); s != v1alpha1.DeorbitWouldDelete {
					t.Errorf("p-orphan: state %s, want WouldDelete (with its load balancer)", s)
				}
			},
		},
		{
			// The exclusion names the load balancer only: its VIP port and its floating IP go with it, in the operator's
			// teardown (the annotation) and the command's (--exclude) alike.
			name:      "an excluded load balancer keeps its floating IP and its VIP port",
			setup:     func(c *memCloud, in *Input, a *asker) { a.exclude = map[string]bool{"lb-web": true} },
			wantPhase: v1alpha1.DeorbitPhaseDone, wantDeleted: []string{"p-orphan", "f-loose"}, wantKept: append([]string{"lb-web", "p-web", "f-web"}, theirs...),
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				for _, r := range [][2]string{{v1alpha1.DeorbitLoadBalancer, "lb-web"}, {v1alpha1.DeorbitFloatingIP, "f-web"}} {
					if s := state(st, r[0], r[1]); s != v1alpha1.DeorbitKept {
						t.Errorf("%s %s: state %s, want Kept", r[0], r[1], s)
					}
				}
				if a.asked[VerbDeleteFloatingIP+" f-web"] != 0 {
					t.Errorf("the excluded load balancer's floating IP was asked to be deleted %d times", a.asked[VerbDeleteFloatingIP+" f-web"])
				}
				if _, ok := c.net.fips["f-web"]; !ok {
					t.Errorf("f-web, the excluded load balancer's floating IP, was deleted")
				}
			},
		},
		{
			// The operator's path: the remediation policy itself, with the cluster's exclude annotation naming the load
			// balancer by its ID.
			name: "the exclude annotation keeps a load balancer's floating IP in the operator's teardown",
			setup: func(c *memCloud, in *Input, a *asker) {
				vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1", UID: "u1",
					Annotations: map[string]string{v1alpha1.AnnotationExclude: "some-other, lb-web"}}}
				clk := clocktesting.NewFakeClock(start)
				pol, err := remediation.New(remediation.Options{Checks: remediation.NewChecks(clk), Clock: clk})
				if err != nil {
					panic(err)
				}
				in.Policy = pol.Begin(context.Background(), vc, Name, nil, remediation.Scope{})
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantDeleted: []string{"p-orphan", "f-loose"}, wantKept: append([]string{"lb-web", "p-web", "f-web"}, theirs...),
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				if s := state(st, v1alpha1.DeorbitFloatingIP, "f-web"); s != v1alpha1.DeorbitKept {
					t.Errorf("f-web: state %s, want Kept", s)
				}
				if _, ok := c.net.fips["f-web"]; !ok {
					t.Errorf("f-web, the excluded load balancer's floating IP, was deleted")
				}
			},
		},
		{
			// `vitals deorbit` without the management cluster cannot read same-named neighbours: the sweep deletes
			// nothing, reports what it found as not proven, and does not wait for it until the give-up.
			name: "a standing refusal of the sweep: nothing deleted directly, the teardown ends",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.SweepRefused = "no management cluster: same-named neighbours could not be read"
				in.SweepGuard = func(context.Context) (string, error) { panic("the guard is asked under a standing refusal") }
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantKept: append(ours, theirs...),
			wantDebris: []string{"Port p-web", "Port p-orphan", "FloatingIP f-web", "FloatingIP f-loose"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				if len(st.Debris) != 0 {
					t.Errorf("debris %+v, want none (what was not deleted is not proven, listed apart)", st.Debris)
				}
				for _, r := range st.NotProven {
					// the rest go with their load balancers, and say so
					if (r.Type == v1alpha1.DeorbitLoadBalancer || r.ID == "f-loose") && !strings.Contains(r.LastError, "no management cluster") {
						t.Errorf("not proven %s %s: %q does not say why", r.Type, r.ID, r.LastError)
					}
				}
				if _, ok := c.lbs["lb-orphan"]; !ok {
					t.Errorf("lb-orphan was deleted under a standing refusal")
				}
			},
		},
		{
			name: "a failed list of floating IPs: no port or floating IP deleted in that step",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.net.failLists = 1 << 20
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantKept: append(ours, theirs...),
			// At the give-up the list fails too: the ports remembered are reported, unconfirmed.
			wantDebris: []string{"Port p-web", "Port p-orphan"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				if !strings.Contains(st.LastError, "list floating IPs") {
					t.Errorf("last error %q, want the failed list", st.LastError)
				}
			},
		},
		{
			name: "a port whose delete keeps failing is debris",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.failDeletes["p-orphan"] = 1 << 20
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantDeleted: []string{"p-web", "f-web", "f-loose"}, wantKept: append([]string{"p-orphan"}, theirs...),
			wantDebris: []string{"Port p-orphan"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				if got := testutil.ToFloat64(m.DebrisLeft.WithLabelValues(v1alpha1.DeorbitPort)); got != 1 {
					t.Errorf("vitals_deorbit_debris_left_total{type=Port} = %v, want 1", got)
				}
			},
		},
		{
			name: "another cluster names the same cloud cluster: no port or floating IP deleted",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.SweepGuard = guardAnswers("VitalsCluster other/c1 names the same cloud cluster", nil)
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantKept: append(ours, theirs...),
			wantDebris: []string{"Port p-web", "Port p-orphan", "FloatingIP f-web", "FloatingIP f-loose"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, a *asker, m *Metrics) {
				if s := state(st, v1alpha1.DeorbitFloatingIP, "f-loose"); s != v1alpha1.DeorbitUnproven {
					t.Errorf("f-loose state %s, want Unproven", s)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, wl := fixture(t)
			netFixture(cloud)
			clk := clocktesting.NewFakeClock(start)
			a := &asker{outcome: remediation.Allowed}
			in := Input{Target: target(), Settings: settings(), Workload: wl, Cloud: cloud, Policy: a}
			if tc.setup != nil {
				tc.setup(cloud, &in, a)
			}
			m := NewMetrics(nil)
			e := &Engine{Clock: clk, Rand: func() float64 { return 0.5 }, Workers: 3, Metrics: m}
			st := &v1alpha1.DeorbitStatus{}
			var mutate func(int, *Input)
			if tc.mutate != nil {
				mutate = func(i int, _ *Input) { tc.mutate(cloud, i) }
			}
			_, steps := run(t, e, clk, in, st, 500, mutate)
			if st.Phase != tc.wantPhase {
				t.Fatalf("after %d steps: phase %s (last error %q), want %s; resources %+v", steps, st.Phase, st.LastError, tc.wantPhase, st.Resources)
			}
			wantDeletes(t, cloud, tc.wantDeleted, tc.wantKept)
			var debris []string
			for _, d := range append(append([]v1alpha1.DeorbitResource(nil), st.Debris...), st.NotProven...) {
				if d.Type == v1alpha1.DeorbitPort || d.Type == v1alpha1.DeorbitFloatingIP {
					debris = append(debris, d.Type+" "+d.ID)
				}
			}
			slices.Sort(debris)
			want := slices.Sorted(slices.Values(tc.wantDebris))
			if strings.Join(debris, ",") != strings.Join(want, ",") {
				t.Errorf("debris and not proven of the network %v, want %v", debris, tc.wantDebris)
			}
			if tc.check != nil {
				tc.check(t, cloud, st, a, m)
			}
		})
	}
}

// wantDeletes checks that each of once was deleted once and each of never never.
func wantDeletes(t *testing.T, c *memCloud, once, never []string) {
	t.Helper()
	for _, id := range once {
		if n := c.deletes[id]; n != 1 {
			t.Errorf("%s deleted %d times, want once", id, n)
		}
	}
	for _, id := range never {
		if n := c.deletes[id]; n != 0 {
			t.Errorf("%s deleted %d times, want never", id, n)
		}
	}
}

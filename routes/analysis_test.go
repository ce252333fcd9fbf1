package routes

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/openstack"
)

func rt(dst, hop string) openstack.Route { return openstack.Route{Destination: dst, NextHop: hop} }

func addrs(pairs ...string) *Addresses {
	a := NewAddresses()
	for _, p := range pairs {
		a.Add(p, "port-"+p)
	}
	return a
}

func TestAnalyze(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	pods := []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")}
	ports := []SourceRead{{Name: "ports", Items: 3}}
	iv := time.Minute
	orphan := rt("198.19.3.0/24", "10.0.0.99")
	tests := []struct {
		name     string
		in       Input
		verdicts []Verdict
		proven   []openstack.Route
		suspects int
		unsafe   bool
	}{
		{
			name:     "live route stays",
			in:       Input{Routes: []openstack.Route{rt("198.19.1.0/24", "10.0.0.5")}, Live: addrs("10.0.0.5")},
			verdicts: []Verdict{Live},
		},
		{
			name:     "foreign route stays even when orphaned",
			in:       Input{Routes: []openstack.Route{rt("0.0.0.0/0", "10.0.0.99"), rt("198.18.0.0/24", "10.0.0.99"), rt("198.0.0.0/8", "10.0.0.99")}, Live: addrs("10.0.0.5")},
			verdicts: []Verdict{Foreign, Foreign, Foreign},
		},
		{
			name:     "first sighting is only a suspect",
			in:       Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5")},
			verdicts: []Verdict{Suspect}, suspects: 1,
		},
		{
			name: "second sighting one interval later removes",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5"),
				Suspects: []SuspectRecord{{Route: orphan, FirstSeen: t0.Add(-iv), Passes: 1}}},
			verdicts: []Verdict{Proven}, proven: []openstack.Route{orphan},
		},
		{
			name: "second sighting too soon waits",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5"),
				Suspects: []SuspectRecord{{Route: orphan, FirstSeen: t0.Add(-iv / 2), Passes: 1}}},
			verdicts: []Verdict{Suspect}, suspects: 1,
		},
		{
			name: "old first sighting alone does not prove (one pass)",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5"),
				Suspects: []SuspectRecord{{Route: rt("198.19.3.0/24", "10.0.0.98"), FirstSeen: t0.Add(-time.Hour), Passes: 1}}},
			verdicts: []Verdict{Suspect}, suspects: 1,
		},
		{
			name: "suspect that came back to life is forgotten",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5", "10.0.0.99"),
				Suspects: []SuspectRecord{{Route: orphan, FirstSeen: t0.Add(-iv), Passes: 1}}},
			verdicts: []Verdict{Live},
		},
		{
			name: "protected route stays",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5"),
				Protected: []ProtectedRoute{{Destination: netip.MustParsePrefix("198.19.3.0/24")}},
				Suspects:  []SuspectRecord{{Route: orphan, FirstSeen: t0.Add(-iv), Passes: 1}}},
			verdicts: []Verdict{Protected},
		},
		{
			name: "protection by destination and other nexthop does not protect",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5"),
				Protected: []ProtectedRoute{{Destination: netip.MustParsePrefix("198.19.3.0/24"), NextHop: netip.MustParseAddr("10.0.0.1")}}},
			verdicts: []Verdict{Suspect}, suspects: 1,
		},
		{
			name: "proven oldest first",
			in: Input{Routes: []openstack.Route{rt("198.19.1.0/24", "10.0.0.91"), rt("198.19.2.0/24", "10.0.0.92"), rt("198.19.3.0/24", "10.0.0.93")},
				Live: addrs("10.0.0.5"),
				Suspects: []SuspectRecord{
					{Route: rt("198.19.1.0/24", "10.0.0.91"), FirstSeen: t0.Add(-iv), Passes: 1},
					{Route: rt("198.19.2.0/24", "10.0.0.92"), FirstSeen: t0.Add(-3 * iv), Passes: 3},
					{Route: rt("198.19.3.0/24", "10.0.0.93"), FirstSeen: t0.Add(-2 * iv), Passes: 2},
				}},
			verdicts: []Verdict{Proven, Proven, Proven},
			proven:   []openstack.Route{rt("198.19.2.0/24", "10.0.0.92"), rt("198.19.3.0/24", "10.0.0.93"), rt("198.19.1.0/24", "10.0.0.91")},
		},
		{
			name: "allowed address pair network keeps nexthop live",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5", "10.0.0.96/28"),
				Suspects: []SuspectRecord{{Route: orphan, FirstSeen: t0.Add(-iv), Passes: 1}}},
			verdicts: []Verdict{Live},
		},
		{
			name:     "unparseable route is never touched",
			in:       Input{Routes: []openstack.Route{rt("198.19.3.0/24", "not-an-ip"), rt("junk", "10.0.0.9")}, Live: addrs("10.0.0.5")},
			verdicts: []Verdict{Invalid, Invalid},
		},
		{
			name:     "route wider than the pod CIDR is foreign",
			in:       Input{Routes: []openstack.Route{rt("198.18.0.0/15", "10.0.0.99")}, Live: addrs("10.0.0.5")},
			verdicts: []Verdict{Foreign},
		},
		{
			name: "a source that listed nothing aborts",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("10.0.0.5"),
				Sources:  []SourceRead{{Name: "ports", Items: 3}, {Name: "servers", Items: 0}},
				Suspects: []SuspectRecord{{Route: orphan, FirstSeen: t0.Add(-iv), Passes: 1}}},
			unsafe: true,
		},
		{
			name: "empty sources are fine without routes of ours",
			in: Input{Routes: []openstack.Route{rt("0.0.0.0/0", "10.0.0.1")}, Live: addrs(),
				Sources: []SourceRead{{Name: "ports", Items: 0}}},
			verdicts: []Verdict{Foreign},
		},
		{
			name: "no live address in the nodes' subnet aborts",
			in: Input{Routes: []openstack.Route{orphan}, Live: addrs("192.168.0.5"),
				Subnet:   netip.MustParsePrefix("10.0.0.0/24"),
				Suspects: []SuspectRecord{{Route: orphan, FirstSeen: t0.Add(-iv), Passes: 1}}},
			unsafe: true,
		},
		{
			name: "IPv6 pod CIDR",
			in: Input{Routes: []openstack.Route{rt("fd00:10:0:3::/64", "fd00::99"), rt("fd00:10:0:4::/64", "fd00::5")},
				PodCIDRs: []netip.Prefix{netip.MustParsePrefix("fd00:10::/48")}, Live: addrs("fd00::5")},
			verdicts: []Verdict{Suspect, Live}, suspects: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Now, in.Interval = t0, iv
			if in.PodCIDRs == nil {
				in.PodCIDRs = pods
			}
			if in.Sources == nil {
				in.Sources = ports
			}
			plan, err := Analyze(in)
			var ue *UnsafeError
			if tc.unsafe {
				if !errors.As(err, &ue) {
					t.Fatalf("want UnsafeError, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Analyze: %v", err)
			}
			if len(plan.Results) != len(tc.verdicts) {
				t.Fatalf("got %d results, want %d", len(plan.Results), len(tc.verdicts))
			}
			for i, v := range tc.verdicts {
				if plan.Results[i].Verdict != v {
					t.Errorf("route %v: verdict %s (%s), want %s", plan.Results[i].Route, plan.Results[i].Verdict, plan.Results[i].Detail, v)
				}
			}
			if len(plan.Proven) != len(tc.proven) {
				t.Fatalf("proven %v, want %v", plan.Proven, tc.proven)
			}
			for i := range tc.proven {
				if got := plan.Proven[i].Record.Route; got != tc.proven[i] || plan.Results[plan.Proven[i].Index].Route != got {
					t.Errorf("proven[%d] = %v, want %v", i, got, tc.proven[i])
				}
			}
			if len(plan.Suspects) != tc.suspects {
				t.Errorf("suspects %v, want %d", plan.Suspects, tc.suspects)
			}
		})
	}
}

func TestAnalyzeTwoPasses(t *testing.T) {
	// Feeding a pass's suspects into the next: removal happens on the pass one interval later.
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	in := Input{
		Routes:   []openstack.Route{rt("198.19.3.0/24", "10.0.0.99")},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")},
		Live:     addrs("10.0.0.5"), Sources: []SourceRead{{"ports", 1}},
		Interval: time.Minute,
	}
	for i, want := range []struct {
		after time.Duration
		n     int
	}{{0, 0}, {30 * time.Second, 0}, {time.Minute, 1}} {
		in.Now = t0.Add(want.after)
		plan, err := Analyze(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Proven) != want.n {
			t.Fatalf("pass %d at +%s: proves %d, want %d", i+1, want.after, len(plan.Proven), want.n)
		}
		in.Suspects = plan.Suspects
	}
}

// BenchmarkAnalyze: one pass's decision for a router at Neutron's default route limit scaled up
// (250 routes) against a project of 5000 ports, a third of the routes orphaned.
func BenchmarkAnalyze(b *testing.B) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	live := NewAddresses()
	for i := range 5000 {
		live.Add(netip.AddrFrom4([4]byte{10, 180, byte(i / 250), byte(i%250 + 1)}).String(), "port")
	}
	var routes []openstack.Route
	var suspects []SuspectRecord
	for i := range 250 {
		hop := netip.AddrFrom4([4]byte{10, 180, byte(i / 250), byte(i%250 + 1)})
		if i%3 == 0 {
			hop = netip.AddrFrom4([4]byte{10, 181, 0, byte(i%250 + 1)})
		}
		r := openstack.Route{Destination: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(i), 0}), 24).String(), NextHop: hop.String()}
		routes = append(routes, r)
		if i%3 == 0 {
			suspects = append(suspects, SuspectRecord{Route: r, FirstSeen: t0.Add(-time.Hour), Passes: 1})
		}
	}
	in := Input{Routes: routes, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")}, Live: live,
		Sources: []SourceRead{{"ports", 5000}}, Suspects: suspects, Now: t0, Interval: time.Minute}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(in); err != nil {
			b.Fatal(err)
		}
	}
}

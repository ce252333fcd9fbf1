package routes

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/openstack"
)

var errConflict = errors.New("412 precondition failed")

// memRouter is an in-memory router with a revision, that answers a stale If-Match with a conflict.
// The real Neutron is exercised by test/e2e; this covers the retry arithmetic.
type memRouter struct {
	openstack.Routers
	routes   []openstack.Route
	rev      int
	interfer []func(*memRouter) // run before the n-th SetRoutes
	sets     int
}

func (m *memRouter) GetRouter(context.Context, string) (*openstack.Router, error) {
	return &openstack.Router{Routes: append([]openstack.Route(nil), m.routes...), RevisionNumber: m.rev}, nil
}

func (m *memRouter) SetRoutes(_ context.Context, _ string, rs []openstack.Route, rev int) (*openstack.Router, error) {
	if m.sets < len(m.interfer) {
		m.interfer[m.sets](m)
	}
	m.sets++
	if rev != m.rev {
		return nil, errConflict
	}
	m.routes, m.rev = rs, m.rev+1
	return m.GetRouter(context.Background(), "")
}

func TestRemoverIfMatch(t *testing.T) {
	a, b, c := rt("198.19.1.0/24", "10.0.0.1"), rt("198.19.2.0/24", "10.0.0.2"), rt("198.19.3.0/24", "10.0.0.3")
	add := func(r openstack.Route) func(*memRouter) {
		return func(m *memRouter) { m.routes = append(m.routes, r); m.rev++ }
	}
	tests := []struct {
		name      string
		interfere []func(*memRouter)
		attempts  int
		wantErr   bool
		left      int
		conflicts int
		waits     []time.Duration // between the attempts (ConflictBackoff with a draw of 0.5)
	}{
		{"no conflict", nil, 5, false, 1, 0, nil},
		{"one conflict retried, concurrent route kept", []func(*memRouter){add(c)}, 5, false, 2, 1, []time.Duration{62500 * time.Microsecond}},
		{"conflicts back off", []func(*memRouter){add(c), add(c), add(c)}, 5, false, 4, 3,
			[]time.Duration{62500 * time.Microsecond, 125 * time.Millisecond, 250 * time.Millisecond}},
		{"conflicts beyond the attempts fail", []func(*memRouter){add(c), add(c), add(c)}, 2, true, 4, 1, []time.Duration{62500 * time.Microsecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &memRouter{routes: []openstack.Route{a, b}, rev: 7, interfer: tc.interfere}
			clk := &instantClock{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))}
			res, err := Remover{Routers: m, IsConflict: func(e error) bool { return errors.Is(e, errConflict) }, Attempts: tc.attempts,
				Clock: clk, Rand: func() float64 { return 0.5 }}.
				Remove(context.Background(), "r", []openstack.Route{b}, false)
			if !slices.Equal(clk.waits, tc.waits) {
				t.Errorf("waits %v, want %v", clk.waits, tc.waits)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if len(m.routes) != tc.left {
				t.Errorf("routes left %v, want %d", m.routes, tc.left)
			}
			if res.Conflicts != tc.conflicts {
				t.Errorf("conflicts %d, want %d", res.Conflicts, tc.conflicts)
			}
			for _, r := range m.routes {
				if r == b && !tc.wantErr {
					t.Errorf("route b still there")
				}
			}
		})
	}
}

// instantClock records each timer's duration and lets it fire at once.
type instantClock struct {
	*clocktesting.FakeClock
	waits []time.Duration
}

func (c *instantClock) NewTimer(d time.Duration) clock.Timer {
	c.waits = append(c.waits, d)
	t := c.FakeClock.NewTimer(d)
	c.FakeClock.Step(d)
	return t
}

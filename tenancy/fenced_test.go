package tenancy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// writeCounter counts the requests other than GET that reach the wire.
type writeCounter struct {
	next   http.RoundTripper
	writes atomic.Int32
}

func (w *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.URL.Path != "/v3/auth/tokens" {
		w.writes.Add(1)
	}
	return w.next.RoundTrip(r)
}

// TestScopedWritesAreFenced: every write of the scoped cloud is sent only through the fence of its
// context: without one, or refused by it, nothing but the proof's reads reaches the simulator; with an
// open fence each write goes out.
func TestScopedWritesAreFenced(t *testing.T) {
	sim, err := cloudsim.New(cloudsim.Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim.Handler())
	t.Cleanup(ts.Close)
	a, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "team-a", Name: "a", Nodes: 2, OrphanedRoutes: 2, Volumes: 1, LoadBalancers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.CreateUser("alice", "alice-password", false, a.ProjectID); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// a floating IP of the project, made by an admin as the cloud controller manager's are
	if _, err := sim.CreateUser("admin", "admin-password", true, a.ProjectID); err != nil {
		t.Fatal(err)
	}
	admin, err := openstack.Connect(ctx, openstack.Config{Auth: openstack.Auth{Options: authOptions(ts.URL+"/v3", "admin", "team-a")}})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := admin.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: externalNetwork(t, nc), ProjectID: a.ProjectID}).Extract(); err != nil {
		t.Fatal(err)
	}
	wc := &writeCounter{next: http.DefaultTransport}
	conn, err := openstack.Connect(ctx, openstack.Config{Auth: openstack.Auth{Options: authOptions(ts.URL+"/v3", "alice", "team-a")}, Transport: wc, HTTPTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	scope, err := tenancy.ScopeOf(ctx, conn, v1alpha1.OpenStackSpec{RouterID: a.RouterID}, "test credentials")
	if err != nil {
		t.Fatal(err)
	}
	cl := scope.Cloud
	groups, err := cl.ListSecurityGroups(ctx, openstack.ListOpts{})
	if err != nil || len(groups) == 0 {
		t.Fatalf("security groups: %v %v", groups, err)
	}
	group := groups[0]
	orphan := a.OrphanedRoutes[0]
	route := []openstack.Route{{Destination: orphan.Destination, NextHop: orphan.NextHop}}
	node, other := a.Nodes[0], a.Nodes[1]
	writes := []struct {
		name  string
		write func(context.Context) error
	}{
		{"RemoveRoutes", func(ctx context.Context) error { _, err := cl.RemoveRoutes(ctx, a.RouterID, route); return err }},
		{"AddRoutes", func(ctx context.Context) error { _, err := cl.AddRoutes(ctx, a.RouterID, route); return err }},
		{"SetRoutes", func(ctx context.Context) error {
			r, err := cl.GetRouter(ctx, a.RouterID)
			if err != nil {
				return err
			}
			_, err = cl.SetRoutes(ctx, a.RouterID, r.Routes, r.RevisionNumber)
			return err
		}},
		{"SetAllowedAddressPairs", func(ctx context.Context) error {
			_, err := cl.SetAllowedAddressPairs(ctx, node.PortID, 0, []openstack.AddressPair{{IPAddress: "198.19.0.0/24"}})
			return err
		}},
		{"CreateSecurityGroupRule", func(ctx context.Context) error {
			_, err := cl.CreateSecurityGroupRule(ctx, group.ID, openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 4240, PortRangeMax: 4240})
			return err
		}},
		{"DeleteSecurityGroupRule", func(ctx context.Context) error {
			gs, err := cl.ListSecurityGroups(ctx, openstack.ListOpts{})
			if err != nil {
				return err
			}
			for _, g := range gs {
				if g.ID == group.ID && len(g.Rules) > 0 {
					return cl.DeleteSecurityGroupRule(ctx, g.Rules[len(g.Rules)-1].ID)
				}
			}
			return nil
		}},
		{"RemoveSecurityGroup", func(ctx context.Context) error { return cl.RemoveSecurityGroup(ctx, node.ID, group.ID) }},
		{"AddSecurityGroup", func(ctx context.Context) error { return cl.AddSecurityGroup(ctx, node.ID, group.ID) }},
		{"RebootServer", func(ctx context.Context) error { return cl.RebootServer(ctx, node.ID, false) }},
		{"DeletePort", func(ctx context.Context) error { return cl.DeletePort(ctx, other.PortID) }},
		{"DeleteServer", func(ctx context.Context) error { return cl.DeleteServer(ctx, other.ID) }},
		{"DeleteVolume", func(ctx context.Context) error { return cl.DeleteVolume(ctx, a.Volumes[0], false) }},
		{"DeleteLoadBalancer", func(ctx context.Context) error { return cl.DeleteLoadBalancer(ctx, a.LoadBalancers[0], true) }},
		{"DeleteFloatingIP", func(ctx context.Context) error {
			fips, err := cl.ListFloatingIPs(ctx, openstack.ListOpts{})
			if err != nil {
				return err
			}
			if len(fips) == 0 {
				return errors.New("the project has no floating IP")
			}
			return cl.DeleteFloatingIP(ctx, fips[0].ID)
		}},
	}
	refusing := fencing.Func(func(context.Context) (context.Context, context.CancelFunc, error) {
		return nil, nil, &fencing.Error{Reason: fencing.ReasonShardNotHeld, Message: "the test holds no range"}
	})
	open := fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		return ctx, cancel, nil
	})
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				ctx    context.Context
				reason fencing.Reason
			}{
				{"no fence", ctx, fencing.ReasonNoFence},
				{"refused", fencing.With(ctx, refusing), fencing.ReasonShardNotHeld},
			} {
				before := wc.writes.Load()
				err := w.write(tc.ctx)
				if r, ok := fencing.ReasonOf(err); !ok || r != tc.reason {
					t.Errorf("%s: %v, want a refusal %s", tc.name, err, tc.reason)
				}
				if n := wc.writes.Load() - before; n != 0 {
					t.Errorf("%s: %d writes reached the cloud", tc.name, n)
				}
			}
			before := wc.writes.Load()
			if err := w.write(fencing.With(ctx, open)); err != nil {
				t.Fatalf("with an open fence: %v", err)
			}
			if wc.writes.Load() == before {
				t.Errorf("with an open fence: no write reached the cloud")
			}
		})
	}
}

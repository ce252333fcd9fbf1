package routegc

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
)

// Name of the controller (events, metrics, status lines, its block status.routegc).
const Name = v1alpha1.ControllerRouteGC

// Reconciler is the route collector: the pass runner with routegc's settings, read and repair.
type Reconciler = pass.Runner[Settings, *State]

// Options tune the route collector.
type Options struct {
	// Defaults of the interval and the cap per pass for clusters that set none.
	Defaults v1alpha1.ControllerDefaults
	// Metrics of routegc's own (nil: unregistered); the passes' are pass.Metrics.
	Metrics *Metrics
	// PassMetrics of the runner (nil: unregistered).
	PassMetrics *pass.Metrics
	// Attempts of a conflicting route update (default 5).
	Attempts int
	// Timeout bounds one pass (default pass.DefaultTimeout).
	Timeout time.Duration
}

// New returns the route collector over VitalsClusters.
func New(d *pass.Deps, o Options) (*Reconciler, error) {
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return pass.New[Settings, *State](d, &collector{o: o}, pass.Options{Timeout: o.Timeout, Metrics: o.PassMetrics})
}

// collector is routegc's part of a pass.
type collector struct{ o Options }

// Settings are a cluster's routegc settings with defaults applied.
type Settings struct {
	v1alpha1.CommonSettings
	Pods      []netip.Prefix
	Protected []routes.ProtectedRoute
	SubnetID  string
	// Ports and Servers are the address sources.
	Ports, Servers bool
}

// Common implements pass.Settings.
func (s Settings) Common() v1alpha1.CommonSettings { return s.CommonSettings }

// State is one pass's read: the settings, the router and the live addresses, the analysis, and the
// status block before and after the pass.
type State struct {
	Settings Settings
	Snapshot *routes.Snapshot
	Plan     routes.Plan
	// Prev is the block before the pass (never nil); Status the block the orphans repair writes.
	Prev, Status *v1alpha1.RouteGCStatus
}

func (g *collector) Name() string { return Name }

func (g *collector) Needs() []string { return []string{remediation.CheckCloud} }

func (g *collector) Repairs() []pass.Repair[*State] {
	return []pass.Repair[*State]{Orphans{m: g.o.Metrics, attempts: g.o.Attempts}}
}

func (g *collector) Total(st *State) int { return st.Plan.Counts.Ours }

func (g *collector) Forget(key types.NamespacedName) { g.o.Metrics.forget(key) }

// Settings returns c's settings, or an error naming the field that cannot be used.
func (g *collector) Settings(c *v1alpha1.VitalsCluster) (Settings, error) {
	sp := c.Spec.Controllers.RouteGC
	s := Settings{CommonSettings: sp.ControllerSpec.Settings(g.o.Defaults), SubnetID: c.Spec.OpenStack.SubnetID}
	var err error
	if s.Pods, err = routes.PodCIDRs(&c.Spec); err != nil {
		return s, err
	}
	if s.Protected, err = routes.ProtectedRoutes(sp.ProtectedRoutes); err != nil {
		return s, err
	}
	if len(sp.AddressSources) == 0 {
		s.Ports, s.Servers = true, true
	}
	for _, src := range sp.AddressSources {
		switch src {
		case v1alpha1.AddressSourcePorts:
			s.Ports = true
		case v1alpha1.AddressSourceServers:
			s.Servers = true
		}
	}
	return s, nil
}

// Read reads the router and the address sources completely, and classifies every route. A read that
// cannot tell live nexthops from dead ones aborts the pass (UnsafeRead).
func (g *collector) Read(ctx context.Context, in *pass.ReadInput[Settings]) (*State, error) {
	s := in.Settings
	snap, err := routes.Read(ctx, in.Scope.Cloud, routes.ReadOptions{RouterID: in.Scope.Router.ID, ProjectID: in.Scope.ProjectID,
		Ports: s.Ports, Servers: s.Servers, SubnetID: s.SubnetID})
	if err != nil {
		return nil, err
	}
	st := &State{Settings: s, Snapshot: snap, Prev: &v1alpha1.RouteGCStatus{}}
	if p := in.Cluster.Status.RouteGC; p != nil {
		st.Prev = p.DeepCopy()
	}
	st.Status = st.Prev.DeepCopy()
	an := routes.Input{Routes: snap.Router.Routes, PodCIDRs: s.Pods, Protected: s.Protected, Live: snap.Live, Sources: snap.Sources,
		Now: in.Now, Interval: s.Interval}
	for _, sr := range st.Prev.Suspects {
		an.Suspects = append(an.Suspects, routes.SuspectRecord{
			Route: openstack.Route{Destination: sr.Destination, NextHop: sr.NextHop}, FirstSeen: sr.FirstSeen.Time, Passes: int(sr.Passes)})
	}
	if st.Plan, err = routes.Analyze(an); err != nil {
		return nil, pass.Abort(pass.ReasonUnsafeRead, err)
	}
	return st, nil
}

// Status writes the block the orphans repair left.
func (g *collector) Status(_ *v1alpha1.VitalsCluster, st *State, _ []string, cs *v1alpha1.ClusterStatus) {
	cs.RouteGC = st.Status
}

// suspects are the records to keep in the status, each with at most the two passes the proof needs (a
// count that grew every pass would be a status write every pass).
func suspects(recs []routes.SuspectRecord) []v1alpha1.SuspectRoute {
	var out []v1alpha1.SuspectRoute
	for _, s := range recs {
		out = append(out, v1alpha1.SuspectRoute{Destination: s.Route.Destination, NextHop: s.Route.NextHop,
			FirstSeen: metav1.NewTime(s.FirstSeen), Passes: int32(min(s.Passes, 2))})
	}
	return out
}

func counts(c routes.Counts) v1alpha1.RouteCounts {
	return v1alpha1.RouteCounts{Routes: int32(c.Routes), Ours: int32(c.Ours), Live: int32(c.Live), Orphaned: int32(c.Orphaned), Protected: int32(c.Protected)}
}

// orphanedLeft says what keeps the orphans left in place.
func orphanedLeft(c routes.Counts, left, held, dry, over int) string {
	return fmt.Sprintf("%d routes, %d in the pod CIDRs, %d orphaned left (%d awaiting proof, %d held by the remediation policy, %d dry run, %d over the pass's budget)",
		c.Routes, c.Ours, left, c.Suspect, held, dry, over)
}

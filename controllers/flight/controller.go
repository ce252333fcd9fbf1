package flight

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
)

// Name of the controller (events, metrics, status lines, its block status.flight).
const Name = v1alpha1.ControllerFlight

// Reconciler is flight: the pass runner with flight's settings, read and repairs.
type Reconciler = pass.Runner[*Settings, *State]

// Options tune flight.
type Options struct {
	// Defaults of the interval and the cap per pass for clusters that set none.
	Defaults v1alpha1.ControllerDefaults
	// Repairs run in this order (nil: DefaultRepairs()).
	Repairs []pass.Repair[*State]
	// Metrics of flight's own (nil: unregistered); the passes' are pass.Metrics.
	Metrics *Metrics
	// PassMetrics of the runner (nil: unregistered).
	PassMetrics *pass.Metrics
	// Timeout bounds one pass (default pass.DefaultTimeout).
	Timeout time.Duration
}

// New returns flight over VitalsClusters.
func New(d *pass.Deps, o Options) (*Reconciler, error) {
	if o.Repairs == nil {
		o.Repairs = DefaultRepairs()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return pass.New[*Settings, *State](d, &flight{o: o, leases: map[types.NamespacedName]*nodes.Leases{}}, pass.Options{Timeout: o.Timeout, Metrics: o.PassMetrics})
}

// DefaultRepairs are every repair flight knows, in the order a pass runs them: the security group
// first (a server without its rules or the group is cut off), then servers, then routes.
func DefaultRepairs() []pass.Repair[*State] {
	return []pass.Repair[*State]{SecurityGroupRules{}, SecurityGroupAssociation{}, ErroredServers{}, SecurityGroupSync{}, Nodes{}, Routes{}}
}

// flight is flight's part of a pass; leases remembers each cluster's node Leases between passes.
type flight struct {
	o      Options
	mu     sync.Mutex
	leases map[types.NamespacedName]*nodes.Leases
}

// Settings are a cluster's flight settings with defaults applied.
type Settings struct {
	v1alpha1.CommonSettings
	PodCIDRs  []netip.Prefix
	MaxRoutes int
	Repairs   v1alpha1.FlightRepairs
	// RouteGC: the route collector runs for this cluster (it then removes stale routes, not flight).
	RouteGC bool
	Read    ReadOptions
}

// Common implements pass.Settings.
func (s *Settings) Common() v1alpha1.CommonSettings { return s.CommonSettings }

// State is one pass's read: the settings, the snapshot, and flight's block before and after the pass.
type State struct {
	Settings *Settings
	Snapshot *Snapshot
	// Prev is flight's block before this pass (never nil); Status the block after it, a copy of Prev
	// each repair rewrites its own fields of (Errored, Escalations, StaleRoutes ...).
	Prev, Status *v1alpha1.FlightStatus
	// LeaseOutage says why the node Leases show an outage ("" when they do not): most went stale at once.
	LeaseOutage string
}

func (f *flight) Name() string { return Name }

func (f *flight) Needs() []string { return []string{remediation.CheckCloud, remediation.CheckWorkload} }

func (f *flight) Repairs() []pass.Repair[*State] { return f.o.Repairs }

func (f *flight) Total(st *State) int { return len(st.Snapshot.Servers) }

func (f *flight) Forget(key types.NamespacedName) {
	f.o.Metrics.forget(key)
	f.mu.Lock()
	delete(f.leases, key)
	f.mu.Unlock()
}

// Scope tells the policy which servers have a disruptive step in flight, by pool, and the outage the node
// Leases show.
func (f *flight) Scope(st *State, s *remediation.Scope) {
	s.InFlight = inFlight(st.Prev.Escalations)
	s.Outage = st.LeaseOutage
}

// leasesOf is the Lease memory of a cluster.
func (f *flight) leasesOf(key types.NamespacedName) *nodes.Leases {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.leases[key]
	if l == nil {
		l = &nodes.Leases{}
		f.leases[key] = l
	}
	return l
}

// Settings returns c's settings, or an error naming the field that cannot be used.
func (f *flight) Settings(c *v1alpha1.VitalsCluster) (*Settings, error) {
	return SettingsOf(c, f.o.Defaults)
}

// SettingsOf returns c's flight settings with defaults d, or an error naming the field that cannot be used.
func SettingsOf(c *v1alpha1.VitalsCluster, d v1alpha1.ControllerDefaults) (*Settings, error) {
	sp := &c.Spec.Controllers.Flight
	ost := c.Spec.OpenStack
	s := &Settings{CommonSettings: sp.ControllerSpec.Settings(d), MaxRoutes: sp.MaxRoutesOrDefault(), Repairs: sp.Repairs,
		RouteGC: c.Spec.Controllers.RouteGC.Enabled == nil || *c.Spec.Controllers.RouteGC.Enabled,
		Read: ReadOptions{RouterID: ost.RouterID, NetworkID: ost.NetworkID, Metadata: sp.Servers.Metadata,
			SecurityGroupID: ost.SecurityGroupID, SecurityGroupName: ost.SecurityGroupName}}
	pods, err := routes.PodCIDRs(&c.Spec)
	if err != nil {
		return s, err
	}
	s.PodCIDRs = pods
	return s, nil
}

// Read reads the cloud and the workload's Nodes completely (see Read); a read that contradicts itself
// aborts the pass (UnsafeRead).
func (f *flight) Read(ctx context.Context, in *pass.ReadInput[*Settings]) (*State, error) {
	ro := in.Settings.Read
	ro.ProjectID, ro.RouterID = in.Scope.ProjectID, in.Scope.Router.ID
	snap, err := Read(ctx, in.Scope.Cloud, in.Workload.Reader(), ro)
	if err != nil {
		var unsafe *UnsafeError
		if errors.As(err, &unsafe) {
			return nil, pass.Abort(pass.ReasonUnsafeRead, err)
		}
		return nil, err
	}
	st := &State{Settings: in.Settings, Snapshot: snap, Prev: &v1alpha1.FlightStatus{}}
	if p := in.Cluster.Status.Flight; p != nil {
		st.Prev = p.DeepCopy()
	}
	st.Status = st.Prev.DeepCopy()
	if in.Settings.Repairs.Nodes.IsEnabled() {
		// The node Leases, uncached (a Lease changes every 10 s per node: an informer would churn for nothing).
		var leases coordinationv1.LeaseList
		if err := in.Workload.Client().List(ctx, &leases, client.InNamespace(corev1.NamespaceNodeLease)); err != nil {
			return nil, fmt.Errorf("list the node Leases of the workload cluster: %w", err)
		}
		key := types.NamespacedName{Namespace: in.Cluster.Namespace, Name: in.Cluster.Name}
		st.LeaseOutage = nodes.MostStale(f.leasesOf(key).Observe(leases.Items, in.Now))
	}
	st.Status.Counts = v1alpha1.FlightCounts{Servers: int32(len(snap.Servers)), Nodes: int32(len(snap.Nodes)), Routes: int32(len(snap.Router.Routes))}
	if snap.Group != nil {
		st.Status.SecurityGroupID = snap.Group.ID
	}
	return st, nil
}

// Status writes the block the repairs left, with the count of unhealthy servers.
func (f *flight) Status(c *v1alpha1.VitalsCluster, st *State, unhealthy []string, cs *v1alpha1.ClusterStatus) {
	st.Status.Counts.Unhealthy = int32(len(unhealthy))
	f.o.Metrics.Unhealthy.WithLabelValues(c.Namespace + "/" + c.Name).Set(float64(len(unhealthy)))
	f.o.Metrics.HostsDown.WithLabelValues(c.Namespace + "/" + c.Name).Set(float64(st.Status.Counts.HostsDown))
	cs.Flight = st.Status
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

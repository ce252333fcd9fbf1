package deorbit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
)

// memCloud is an in-memory project for the phase machine's table tests (the integration tests use
// the real Cinder and Octavia). A delete leaves the object deleting for one read, then it is gone.
type memCloud struct {
	openstack.Routers // unused methods
	mu                sync.Mutex
	vols              map[string]*openstack.Volume
	lbs               map[string]*openstack.LoadBalancer
	routes            []openstack.Route
	deletes           map[string]int
	// failDeletes: the next n deletes of an ID answer 500; stuck: load balancers that stay PENDING_DELETE.
	failDeletes map[string]int
	stuck       map[string]bool
	// snapshots: volumes with snapshots, whose deletes without cascade Cinder refuses (400) that many more
	// times (the snapshots then go by hand); cascades counts the deletes with cascade.
	snapshots map[string]int
	cascades  int
	// gets counts the GETs of single volumes and load balancers.
	gets int
	// net holds the ports and floating IPs (network_test.go); nil: none.
	net *memNet
}

func newMemCloud() *memCloud {
	return &memCloud{vols: map[string]*openstack.Volume{}, lbs: map[string]*openstack.LoadBalancer{}, deletes: map[string]int{},
		failDeletes: map[string]int{}, stuck: map[string]bool{}, snapshots: map[string]int{}}
}

var errNotFound = gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusNotFound}
var err500 = gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusInternalServerError}

// errInvalidVolume is Cinder's answer to the delete of a volume that has snapshots, without cascade.
var errInvalidVolume = gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusBadRequest,
	Body: []byte(`{"badRequest": {"code": 400, "message": "Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots or be disassociated from snapshots after volume transfer."}}`)}

func (m *memCloud) GetRouter(ctx context.Context, id string) (*openstack.Router, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &openstack.Router{ID: id, Routes: append([]openstack.Route(nil), m.routes...)}, nil
}
func (m *memCloud) AtomicRoutes(ctx context.Context) (bool, error) { return true, nil }
func (m *memCloud) RemoveRoutes(ctx context.Context, id string, rs []openstack.Route) (*openstack.Router, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keep []openstack.Route
	for _, r := range m.routes {
		drop := false
		for _, x := range rs {
			drop = drop || x == r
		}
		if !drop {
			keep = append(keep, r)
		} else {
			m.deletes["route "+r.Destination]++
		}
	}
	m.routes = keep
	return &openstack.Router{ID: id, Routes: keep}, nil
}

func (m *memCloud) ListVolumes(ctx context.Context, o openstack.ListOpts) ([]openstack.Volume, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []openstack.Volume
	for id, v := range m.vols {
		out = append(out, *v)
		if v.Status == "deleting" {
			delete(m.vols, id)
		}
	}
	return out, nil
}
func (m *memCloud) GetVolume(ctx context.Context, id string) (*openstack.Volume, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	v, ok := m.vols[id]
	if !ok {
		return nil, errNotFound
	}
	c := *v
	if v.Status == "deleting" {
		delete(m.vols, id)
	}
	return &c, nil
}
func (m *memCloud) DeleteVolume(ctx context.Context, id string, cascade bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failDeletes[id] > 0 {
		m.failDeletes[id]--
		return err500
	}
	v, ok := m.vols[id]
	if !ok {
		return errNotFound
	}
	if cascade {
		m.cascades++
	} else if m.snapshots[id] > 0 {
		m.snapshots[id]--
		return errInvalidVolume
	}
	m.deletes[id]++
	v.Status = "deleting"
	return nil
}
func (m *memCloud) ListLoadBalancers(ctx context.Context, o openstack.ListOpts) ([]openstack.LoadBalancer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []openstack.LoadBalancer
	for id, l := range m.lbs {
		out = append(out, *l)
		if l.ProvisioningStatus == "PENDING_DELETE" && !m.stuck[id] {
			delete(m.lbs, id)
		}
	}
	return out, nil
}
func (m *memCloud) GetLoadBalancer(ctx context.Context, id string) (*openstack.LoadBalancer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	l, ok := m.lbs[id]
	if !ok {
		return nil, errNotFound
	}
	c := *l
	if l.ProvisioningStatus == "PENDING_DELETE" && !m.stuck[id] {
		delete(m.lbs, id)
	}
	return &c, nil
}
func (m *memCloud) DeleteLoadBalancer(ctx context.Context, id string, cascade bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.lbs[id]
	if !ok {
		return errNotFound
	}
	m.deletes[id]++
	l.ProvisioningStatus = "PENDING_DELETE"
	return nil
}

// asker answers every Ask with outcome (Allowed by default), excluding the IDs in exclude, and counts.
type asker struct {
	mu      sync.Mutex
	outcome remediation.Outcome
	exclude map[string]bool
	asked   map[string]int
	done    map[string]int
}

func (a *asker) Ask(ctx context.Context, act remediation.Action) remediation.Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.asked == nil {
		a.asked, a.done = map[string]int{}, map[string]int{}
	}
	a.asked[act.Verb+" "+act.ID]++
	if !act.Teardown {
		panic("deorbit asks without Teardown")
	}
	if a.exclude[act.ID] {
		return remediation.Decision{Outcome: remediation.Held, Reason: remediation.ReasonExcluded}
	}
	if a.outcome == remediation.DryRun {
		return remediation.Decision{Outcome: remediation.DryRun, Reason: remediation.ReasonDryRun}
	}
	return remediation.Decision{Outcome: remediation.Allowed}
}

// Fence is open: the engine's tests are about its steps, not about the fence (remediation's tests are).
func (a *asker) Fence(...remediation.Action) fencing.Fence { return openFence }

var openFence = fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	return ctx, cancel, nil
})

func (a *asker) Done(ctx context.Context, act remediation.Action, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		a.done[act.Verb+" "+act.ID]++
	}
}

func workloadClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func cinderPV(name, vol, claimNS, claim string, policy corev1.PersistentVolumeReclaimPolicy, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeReclaimPolicy: policy,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: ccm.CinderCSIDriver, VolumeHandle: vol}},
	}, Status: corev1.PersistentVolumeStatus{Phase: phase}}
	if claim != "" {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: claimNS, Name: claim}
	}
	return pv
}

func lbService(ns, name, lbID string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		Ports: []corev1.ServicePort{{Port: 80}}}}
	if lbID != "" {
		s.Annotations = map[string]string{ccm.AnnotationLoadBalancerID: lbID}
	}
	return s
}

// fixture is one cluster "c1" with a bound Cinder PVC, a Retain PV, a LoadBalancer Service, a pod
// route, an orphaned CSI volume and a load balancer named by the CCM, and foreign objects that must stay.
func fixture(t *testing.T) (*memCloud, client.Client) {
	cloud := newMemCloud()
	meta := map[string]string{ccm.MetadataCluster: "c1"}
	cloud.vols["v-bound"] = &openstack.Volume{ID: "v-bound", Status: "in-use", Metadata: meta}
	cloud.vols["v-retain"] = &openstack.Volume{ID: "v-retain", Status: "in-use", Metadata: meta}
	cloud.vols["v-orphan"] = &openstack.Volume{ID: "v-orphan", Status: "available", Metadata: meta}
	cloud.vols["v-other"] = &openstack.Volume{ID: "v-other", Status: "available", Metadata: map[string]string{ccm.MetadataCluster: "c1-other"}}
	cloud.vols["v-plain"] = &openstack.Volume{ID: "v-plain", Status: "available"}
	cloud.lbs["lb-web"] = &openstack.LoadBalancer{ID: "lb-web", Name: ccm.LoadBalancerName("c1", "app", "web"), ProvisioningStatus: "ACTIVE"}
	cloud.lbs["lb-orphan"] = &openstack.LoadBalancer{ID: "lb-orphan", Name: "x", Tags: []string{ccm.LoadBalancerName("c1", "app", "gone")}, ProvisioningStatus: "ACTIVE"}
	cloud.lbs["lb-sub"] = &openstack.LoadBalancer{ID: "lb-sub", Name: ccm.LoadBalancerName("c1_b", "app", "web"), ProvisioningStatus: "ACTIVE"}
	cloud.routes = []openstack.Route{{Destination: "10.100.1.0/24", NextHop: "10.0.0.5"}, {Destination: "192.168.0.0/24", NextHop: "10.0.0.6"}}
	wl := workloadClient(t,
		cinderPV("pv-bound", "v-bound", "app", "data", corev1.PersistentVolumeReclaimDelete, corev1.VolumeBound),
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}},
		cinderPV("pv-retain", "v-retain", "app", "keep", corev1.PersistentVolumeReclaimRetain, corev1.VolumeBound),
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "keep"}},
		lbService("app", "web", "lb-web"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "internal"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
	)
	return cloud, wl
}

// guardAnswers is a sweep guard that answers why and err.
func guardAnswers(why string, err error) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return why, err }
}

func target() Target {
	return Target{Key: "ns/c1", ClusterName: "c1", RouterID: "r1", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.100.0.0/16")}}
}

func settings() Settings {
	return Settings{GiveUpAfter: DefaultGiveUpAfter, UnreachableGracePeriod: 10 * time.Minute, CloudWaitTimeout: time.Minute, Budget: DefaultBudget}
}

// run steps the engine until it releases or maxSteps, advancing the fake clock to each deadline; mutate
// may change the input before each step.
func run(t *testing.T, e *Engine, clk *clocktesting.FakeClock, in Input, st *v1alpha1.DeorbitStatus, maxSteps int, mutate func(int, *Input)) (Result, int) {
	t.Helper()
	var res Result
	for i := 0; i < maxSteps; i++ {
		if mutate != nil {
			mutate(i, &in)
		}
		res = e.Step(context.Background(), in, st)
		if res.Release {
			return res, i + 1
		}
		if st.Phase == v1alpha1.DeorbitPhaseDryRunPlanned {
			return res, i + 1
		}
		clk.SetTime(res.Next)
	}
	return res, maxSteps
}

func state(st *v1alpha1.DeorbitStatus, typ, id string) string {
	for _, r := range st.Resources {
		if r.Type == typ && r.ID == id {
			return r.State
		}
	}
	return "(untracked)"
}

func TestStep(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// setup changes the fixture and input.
		setup       func(*memCloud, *Input, *asker)
		mutate      func(int, *Input)
		wantPhase   string
		wantRelease bool
		wantDeleted []string // cloud IDs deleted exactly once
		wantKept    []string // cloud IDs never deleted
		wantDebris  []string // "type id"
		check       func(*testing.T, *memCloud, *v1alpha1.DeorbitStatus, client.Client)
	}{
		{
			name:      "everything of the cluster goes, nothing else",
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"v-orphan", "lb-orphan", "route 10.100.1.0/24"},
			wantKept:    []string{"v-retain", "v-other", "v-plain", "lb-sub", "route 192.168.0.0/24"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				if _, ok := c.vols["v-retain"]; !ok {
					t.Errorf("the Retain volume went")
				}
				if s := state(st, v1alpha1.DeorbitVolume, "v-retain"); s != v1alpha1.DeorbitKept {
					t.Errorf("Retain volume state %s", s)
				}
				var pvc corev1.PersistentVolumeClaim
				if err := wl.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "data"}, &pvc); err == nil {
					t.Errorf("the bound claim is still there")
				}
				var svc corev1.Service
				if err := wl.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "internal"}, &svc); err != nil {
					t.Errorf("the ClusterIP Service went: %v", err)
				}
				if st.Counts.Remaining != 0 || st.Counts.Total == 0 {
					t.Errorf("counts %+v", st.Counts)
				}
			},
		},
		{
			name: "keep markers: on a claim, on a PersistentVolume, in a volume's metadata",
			setup: func(c *memCloud, in *Input, a *asker) {
				ctx := context.Background()
				var pvc corev1.PersistentVolumeClaim
				if err := in.Workload.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, &pvc); err != nil {
					panic(err)
				}
				metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, v1alpha1.AnnotationKeep, "true")
				if err := in.Workload.Update(ctx, &pvc); err != nil {
					panic(err)
				}
				c.vols["v-marked"] = &openstack.Volume{ID: "v-marked", Status: "in-use", Metadata: map[string]string{ccm.MetadataCluster: "c1"}}
				pv := cinderPV("pv-marked", "v-marked", "app", "marked", corev1.PersistentVolumeReclaimDelete, corev1.VolumeBound)
				pv.Annotations = map[string]string{v1alpha1.AnnotationKeep: "true"}
				for _, o := range []client.Object{pv, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "marked"}}} {
					if err := in.Workload.Create(ctx, o); err != nil {
						panic(err)
					}
				}
				c.vols["v-meta"] = &openstack.Volume{ID: "v-meta", Status: "available", Metadata: map[string]string{ccm.MetadataCluster: "c1", v1alpha1.AnnotationKeep: "true"}}
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"v-orphan", "lb-orphan", "route 10.100.1.0/24"},
			wantKept:    []string{"v-bound", "v-marked", "v-meta", "v-retain"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				for _, k := range [][2]string{{v1alpha1.DeorbitVolume, "v-bound"}, {v1alpha1.DeorbitVolume, "v-marked"}, {v1alpha1.DeorbitVolume, "v-meta"},
					{v1alpha1.DeorbitClaim, "app/data"}, {v1alpha1.DeorbitClaim, "app/marked"}} {
					if s := state(st, k[0], k[1]); s != v1alpha1.DeorbitKept {
						t.Errorf("%s %s: state %s, want Kept", k[0], k[1], s)
					}
				}
				for _, name := range []string{"data", "marked"} {
					var pvc corev1.PersistentVolumeClaim
					if err := wl.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: name}, &pvc); err != nil || !pvc.DeletionTimestamp.IsZero() {
						t.Errorf("the kept claim app/%s was deleted: %v", name, err)
					}
				}
			},
		},
		{
			name: "a protected route inside the pod CIDRs stays (routegc's protectedRoutes)",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.routes = append(c.routes, openstack.Route{Destination: "10.100.7.0/24", NextHop: "10.0.0.7"})
				in.Target.Protected = []routes.ProtectedRoute{{Destination: netip.MustParsePrefix("10.100.7.0/24")}}
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"route 10.100.1.0/24"},
			wantKept:    []string{"route 10.100.7.0/24", "route 192.168.0.0/24"},
		},
		{
			name:      "dry run: a plan, nothing deleted, the finalizer held",
			setup:     func(c *memCloud, in *Input, a *asker) { a.outcome = remediation.DryRun },
			wantPhase: v1alpha1.DeorbitPhaseDryRunPlanned, wantRelease: false,
			wantKept: []string{"v-bound", "v-orphan", "lb-web", "lb-orphan", "route 10.100.1.0/24"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				for _, want := range [][2]string{{v1alpha1.DeorbitClaim, "app/data"}, {v1alpha1.DeorbitService, "app/web"},
					{v1alpha1.DeorbitVolume, "v-orphan"}, {v1alpha1.DeorbitVolume, "v-bound"}, {v1alpha1.DeorbitLoadBalancer, "lb-orphan"}, {v1alpha1.DeorbitRoute, "10.100.1.0/24@10.0.0.5"}} {
					if s := state(st, want[0], want[1]); s != v1alpha1.DeorbitWouldDelete {
						t.Errorf("%s %s: state %s, want WouldDelete", want[0], want[1], s)
					}
				}
				var pvc corev1.PersistentVolumeClaim
				if err := wl.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "data"}, &pvc); err != nil {
					t.Errorf("dry run deleted the claim: %v", err)
				}
			},
		},
		{
			name: "workload unreachable: skipped after the grace period, the sweep deletes",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.Workload, in.WorkloadErr = nil, errors.New("connection refused")
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"v-bound", "v-orphan", "lb-web", "lb-orphan"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				if st.WorkloadSkipped == "" {
					t.Errorf("no reason for the skip")
				}
				// v-retain is unknown without the workload cluster: its metadata makes it the sweep's.
				if _, ok := c.vols["v-retain"]; ok {
					t.Errorf("v-retain is still there: without the PV, the metadata decides")
				}
			},
		},
		{
			name:      "excluded volume is kept",
			setup:     func(c *memCloud, in *Input, a *asker) { a.exclude = map[string]bool{"v-orphan": true} },
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantKept: []string{"v-orphan"},
		},
		{
			name: "Cinder delete 500s: retried with backoff, deleted once",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.failDeletes["v-orphan"] = 3
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"v-orphan"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				for _, r := range st.Resources {
					if r.ID == "v-orphan" && r.Attempts != 4 {
						t.Errorf("v-orphan attempts %d, want 4", r.Attempts)
					}
				}
			},
		},
		{
			name: "a volume with snapshots: never deleted with them, left with Cinder's reason, in the debris at the give-up",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.snapshots["v-orphan"] = 1 << 30
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantRelease: true,
			wantDeleted: []string{"lb-orphan", "route 10.100.1.0/24"},
			wantKept:    []string{"v-orphan"},
			wantDebris:  []string{"Volume v-orphan"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				if c.cascades != 0 {
					t.Errorf("%d volume deletes with cascade, want none", c.cascades)
				}
				if d := st.Debris[0]; !strings.Contains(d.LastError, "still has snapshots") || d.Attempts < 2 {
					t.Errorf("debris %+v, want Cinder's refusal as its reason, tried again", d)
				}
			},
		},
		{
			name: "a volume with snapshots: goes at the next attempt once they went",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.snapshots["v-orphan"] = 2
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"v-orphan"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				if c.cascades != 0 {
					t.Errorf("%d volume deletes with cascade, want none", c.cascades)
				}
				for _, r := range st.Resources {
					if r.ID == "v-orphan" && (r.Attempts != 3 || r.LastError != "") {
						t.Errorf("v-orphan attempts %d, last error %q; want 3 and none", r.Attempts, r.LastError)
					}
				}
			},
		},
		{
			name: "a router shared with another cluster of the same pod CIDRs: only the routes via the nodes' subnet go",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.Target.Subnets = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
				c.routes = append(c.routes, openstack.Route{Destination: "10.100.2.0/24", NextHop: "10.1.0.9"},
					openstack.Route{Destination: "10.100.3.0/24", NextHop: "not-an-address"})
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"route 10.100.1.0/24"},
			wantKept:    []string{"route 10.100.2.0/24", "route 10.100.3.0/24", "route 192.168.0.0/24"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				if s := state(st, v1alpha1.DeorbitRoute, "10.100.2.0/24@10.1.0.9"); s != "(untracked)" {
					t.Errorf("the other cluster's route: state %s, want untracked", s)
				}
			},
		},
		{
			name: "a dual-stack cluster with its IPv4 subnet known: its IPv6 routes are judged by their destination",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.Target.Subnets = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
				in.Target.PodCIDRs = append(in.Target.PodCIDRs, netip.MustParsePrefix("fd00:100::/56"))
				c.routes = append(c.routes, openstack.Route{Destination: "fd00:100:0:1::/64", NextHop: "fd00::5"},
					openstack.Route{Destination: "10.100.2.0/24", NextHop: "10.1.0.9"})
			},
			wantPhase: v1alpha1.DeorbitPhaseDone, wantRelease: true,
			wantDeleted: []string{"route 10.100.1.0/24", "route fd00:100:0:1::/64"},
			wantKept:    []string{"route 10.100.2.0/24", "route 192.168.0.0/24"},
		},
		{
			name: "the sweep's guard fails: the sweep deletes nothing",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.SweepGuard = guardAnswers("", errors.New("list clusters to guard the sweep of ns/c1: connection refused"))
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantRelease: true,
			wantKept: []string{"v-orphan", "lb-orphan"},
			// Not proven the cluster's alone (the guard could not rule out another cluster of the name): not
			// debris, but the report's own list.
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				wantNotProven(t, st, "LoadBalancer lb-web", "Volume v-bound", "Volume v-orphan", "LoadBalancer lb-orphan")
				for _, d := range st.NotProven {
					if d.State != v1alpha1.DeorbitUnproven || !strings.Contains(d.LastError, "could not be checked") {
						t.Errorf("not proven %s %s: state %s, last error %q; want Unproven, the guard's failure", d.Type, d.ID, d.State, d.LastError)
					}
				}
			},
		},
		{
			name: "load balancer stuck in PENDING_DELETE: deleted once, debris at the give-up",
			setup: func(c *memCloud, in *Input, a *asker) {
				c.stuck["lb-orphan"] = true
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantRelease: true,
			wantDeleted: []string{"lb-orphan", "v-orphan"},
			wantDebris:  []string{"LoadBalancer lb-orphan"},
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				if d := st.Debris[0]; d.Status != "PENDING_DELETE" || d.Name != "x" {
					t.Errorf("debris %+v", d)
				}
			},
		},
		{
			name: "cloud never verified: give-up says nothing could be checked",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.Cloud, in.CloudErr = nil, errors.New("MissingCredentials: no Secret")
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantRelease: true,
			wantKept:   []string{"v-orphan", "lb-orphan"},
			wantDebris: []string{"LoadBalancer lb-web", "Volume v-bound", "Cloud "},
		},
		{
			name: "another cluster names the same cloud cluster: the sweep deletes nothing",
			setup: func(c *memCloud, in *Input, a *asker) {
				in.SweepGuard = guardAnswers("VitalsCluster other/c1 names the same cloud cluster", nil)
				in.Settings.GiveUpAfter = time.Hour
			},
			wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantRelease: true,
			wantKept: []string{"v-orphan", "lb-orphan"},
			// Without a provisioner and a cloud controller manager in this test, the claim's volume and
			// the Service's load balancer stay too: all of it may be the other cluster's, not debris.
			check: func(t *testing.T, c *memCloud, st *v1alpha1.DeorbitStatus, wl client.Client) {
				wantNotProven(t, st, "LoadBalancer lb-web", "Volume v-bound", "Volume v-orphan", "LoadBalancer lb-orphan")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, wl := fixture(t)
			clk := clocktesting.NewFakeClock(start)
			a := &asker{outcome: remediation.Allowed}
			in := Input{Target: target(), Settings: settings(), Workload: wl, Cloud: cloud, Policy: a}
			if tc.setup != nil {
				tc.setup(cloud, &in, a)
			}
			e := &Engine{Clock: clk, Rand: func() float64 { return 0.5 }, Workers: 3}
			st := &v1alpha1.DeorbitStatus{}
			res, steps := run(t, e, clk, in, st, 500, tc.mutate)
			if st.Phase != tc.wantPhase || res.Release != tc.wantRelease {
				t.Fatalf("after %d steps: phase %s release %v (last error %q), want %s %v; resources %+v", steps, st.Phase, res.Release, st.LastError, tc.wantPhase, tc.wantRelease, st.Resources)
			}
			wantDeletes(t, cloud, tc.wantDeleted, tc.wantKept)
			var debris []string
			for _, d := range st.Debris {
				debris = append(debris, d.Type+" "+d.ID)
				if d.LastError == "" {
					t.Errorf("debris %s %s without a last error", d.Type, d.ID)
				}
			}
			if fmt.Sprint(debris) != fmt.Sprint(tc.wantDebris) && !(len(debris) == 0 && len(tc.wantDebris) == 0) {
				t.Errorf("debris %v, want %v", debris, tc.wantDebris)
			}
			if tc.check != nil {
				tc.check(t, cloud, st, wl)
			}
		})
	}
}

// A step resumes from the status alone: a fresh engine (a restarted operator) given the status of a
// run cut short finishes it and deletes nothing twice.
func TestStepResumes(t *testing.T) {
	cloud, wl := fixture(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := &asker{}
	in := Input{Target: target(), Settings: settings(), Workload: wl, Cloud: cloud, Policy: a}
	st := &v1alpha1.DeorbitStatus{}
	for i := 0; i < 100 && st.Phase != v1alpha1.DeorbitPhaseSweep; i++ {
		res := (&Engine{Clock: clk, Rand: func() float64 { return 0 }}).Step(context.Background(), in, st)
		clk.SetTime(res.Next)
	}
	saved := st.DeepCopy()
	res, _ := run(t, &Engine{Clock: clk, Rand: func() float64 { return 0 }}, clk, in, saved, 100, nil)
	if !res.Release || saved.Phase != v1alpha1.DeorbitPhaseDone {
		t.Fatalf("resumed run: phase %s, release %v", saved.Phase, res.Release)
	}
	for id, n := range cloud.deletes {
		if n != 1 {
			t.Errorf("%s deleted %d times", id, n)
		}
	}
	for k, n := range a.done {
		if n != 1 {
			t.Errorf("%s done %d times", k, n)
		}
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempts int32
		r        float64
		want     time.Duration
	}{
		{0, 0, 5 * time.Second},
		{1, 0, 5 * time.Second},
		{1, 0.999999999, 7500 * time.Millisecond},
		{2, 0, 10 * time.Second},
		{3, 0.5, 25 * time.Second},
		{20, 0, 5 * time.Minute},
	} {
		e := &Engine{Rand: func() float64 { return tc.r }}
		if got := e.backoff(tc.attempts).Round(time.Millisecond); got != tc.want {
			t.Errorf("backoff(%d) with rand %v = %s, want %s", tc.attempts, tc.r, got, tc.want)
		}
	}
}

// Many claims and a small cap per step: every step issues at most the cap and the next one is due at
// once; the wait reads lists instead of one volume at a time (no GET); every volume goes.
func TestStepMany(t *testing.T) {
	cloud := newMemCloud()
	wl := workloadClient(t, boundClaims(cloud, 30)...)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := &asker{}
	set := settings()
	set.Budget = 7
	in := Input{Target: target(), Settings: set, Workload: wl, Cloud: cloud, Policy: a}
	st := &v1alpha1.DeorbitStatus{}
	e := &Engine{Clock: clk, Rand: func() float64 { return 0 }}
	start := clk.Now()
	if first := e.Step(context.Background(), in, st); !first.Next.Equal(start.Add(time.Millisecond)) {
		t.Errorf("a step at its cap asks for the next at %s, want at once (%s)", first.Next, start.Add(time.Millisecond))
	} else {
		clk.SetTime(first.Next)
	}
	// The provisioner: the volume of a deleted claim is deleted.
	provisioner := func(int, *Input) {
		cloud.mu.Lock()
		defer cloud.mu.Unlock()
		for id, v := range cloud.vols {
			err := wl.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "data-" + id}, &corev1.PersistentVolumeClaim{})
			if apierrors.IsNotFound(err) {
				v.Status = "deleting"
			}
		}
	}
	res, steps := run(t, e, clk, in, st, 200, provisioner)
	if !res.Release || st.Phase != v1alpha1.DeorbitPhaseDone {
		t.Fatalf("after %d steps: phase %s, last error %q", steps, st.Phase, st.LastError)
	}
	if cloud.gets != 0 {
		t.Errorf("%d GETs of single volumes: the lists confirm them", cloud.gets)
	}
	if len(cloud.vols) != 0 {
		t.Errorf("%d volumes left", len(cloud.vols))
	}
	for id, n := range cloud.deletes {
		if n != 1 {
			t.Errorf("%s deleted %d times", id, n)
		}
	}
	if st.Counts.Total != 60 || st.Counts.Remaining != 0 {
		t.Errorf("counts %+v", st.Counts)
	}
}

// The LoadBalancer Services' chain runs beside the snapshots' and claims': their deletes start at the
// first step while the phase still says where the claims are. Cut after any step, a fresh engine (a
// restarted operator) given the status finishes the teardown, and nothing is asked or deleted twice.
func TestStepChainsResumeAnywhere(t *testing.T) {
	setup := func(t *testing.T) (*memCloud, Input, *asker) {
		cloud := newMemCloud()
		objs := boundClaims(cloud, 5)
		for i := 0; i < 3; i++ {
			id, svc := fmt.Sprintf("lb%d", i), fmt.Sprintf("web%d", i)
			cloud.lbs[id] = &openstack.LoadBalancer{ID: id, Name: ccm.LoadBalancerName("c1", "app", svc), ProvisioningStatus: "ACTIVE"}
			objs = append(objs, lbService("app", svc, id))
		}
		a := &asker{}
		set := settings()
		set.Budget = 2
		return cloud, Input{Target: target(), Settings: set, Workload: workloadClient(t, objs...), Cloud: cloud, Policy: a}, a
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	// The first step deletes Services (up to the cap) and stays in the first phase.
	_, in, _ := setup(t)
	st := &v1alpha1.DeorbitStatus{}
	(&Engine{Clock: clocktesting.NewFakeClock(start)}).Step(context.Background(), in, st)
	if st.Phase != v1alpha1.DeorbitPhaseSnapshots && st.Phase != v1alpha1.DeorbitPhaseClaims {
		t.Errorf("after the first step: phase %s, want the snapshots' or the claims'", st.Phase)
	}
	if n := st.Counts.Done; n != 2 || state(st, v1alpha1.DeorbitService, "app/web0") != v1alpha1.DeorbitDeleting {
		t.Errorf("after the first step: %d done, app/web0 %s; want the first 2 Services deleting", n, state(st, v1alpha1.DeorbitService, "app/web0"))
	}

	for cut := 1; cut < 30; cut++ {
		cloud, in, a := setup(t)
		clk := clocktesting.NewFakeClock(start)
		st := &v1alpha1.DeorbitStatus{}
		var res Result
		for i := 0; i < cut && !res.Release; i++ {
			res = (&Engine{Clock: clk, Rand: func() float64 { return 0 }}).Step(context.Background(), in, st)
			if !res.Release {
				clk.SetTime(res.Next)
			}
		}
		phase := st.Phase
		if !res.Release {
			saved := st.DeepCopy()
			res, _ = run(t, &Engine{Clock: clk, Rand: func() float64 { return 0 }}, clk, in, saved, 100, nil)
			st = saved
		}
		if !res.Release || st.Phase != v1alpha1.DeorbitPhaseDone {
			t.Fatalf("cut after %d steps (in %s): phase %s, last error %q", cut, phase, st.Phase, st.LastError)
		}
		if len(cloud.vols)+len(cloud.lbs) != 0 {
			t.Errorf("cut after %d steps: %d volumes and %d load balancers left", cut, len(cloud.vols), len(cloud.lbs))
		}
		for id, n := range cloud.deletes {
			if n != 1 {
				t.Errorf("cut after %d steps: %s deleted %d times", cut, id, n)
			}
		}
		for k, n := range a.asked {
			if n != 1 {
				t.Errorf("cut after %d steps: %s asked %d times", cut, k, n)
			}
		}
		// No provisioner or cloud controller manager here: the sweep deletes the volumes and load balancers.
		if len(a.asked) != 16 {
			t.Errorf("cut after %d steps: %d deletes asked, want the 5 claims, 3 Services, 5 volumes and 3 load balancers", cut, len(a.asked))
		}
		if phase == v1alpha1.DeorbitPhaseDone {
			break
		}
	}
}

// boundClaims adds n volumes of cluster c1 to cloud and returns their PersistentVolumes and bound claims
// (volume vNN, PV pv-vNN, claim app/data-vNN).
func boundClaims(cloud *memCloud, n int) []client.Object {
	var objs []client.Object
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("v%02d", i)
		cloud.vols[id] = &openstack.Volume{ID: id, Status: "in-use", Metadata: map[string]string{ccm.MetadataCluster: "c1"}}
		objs = append(objs, cinderPV("pv-"+id, id, "app", "data-"+id, corev1.PersistentVolumeReclaimDelete, corev1.VolumeBound),
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-" + id}})
	}
	return objs
}

// The wait looks again after minPoll once a look finds some of the resources gone and others not (the
// rest of a burst of deletes is due), and otherwise after a quarter of the time waited (to Poll).
func TestWaitLooks(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		waited  time.Duration
		deleted []string // of v1, v2, v3 (all Deleting before the look), those the cloud no longer shows
		wantIn  time.Duration
		done    bool
	}{
		{name: "nothing gone yet, early", waited: 0, wantIn: minPoll},
		{name: "nothing gone yet, 8 s in", waited: 8 * time.Second, wantIn: 2 * time.Second},
		{name: "nothing gone yet, 10 min in", waited: 10 * time.Minute, wantIn: DefaultPoll},
		{name: "some gone, 8 s in: the rest are due", waited: 8 * time.Second, deleted: []string{"v1"}, wantIn: minPoll},
		{name: "some gone, 10 min in", waited: 10 * time.Minute, deleted: []string{"v1", "v2"}, wantIn: minPoll},
		{name: "all gone", waited: 8 * time.Second, deleted: []string{"v1", "v2", "v3"}, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := newMemCloud()
			st := &v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseWaitForCloud,
				StartTime: &metav1.Time{Time: start}, PhaseStartTime: &metav1.Time{Time: start}}
			for _, id := range []string{"v1", "v2", "v3"} {
				// "in-use": the memory cloud keeps showing it (a "deleting" one goes after one read).
				cloud.vols[id] = &openstack.Volume{ID: id, Status: "in-use", Metadata: map[string]string{ccm.MetadataCluster: "c1"}}
				st.Resources = append(st.Resources, v1alpha1.DeorbitResource{Type: v1alpha1.DeorbitVolume, ID: id, State: v1alpha1.DeorbitDeleting})
			}
			for _, id := range tc.deleted {
				delete(cloud.vols, id)
			}
			clk := clocktesting.NewFakeClock(start.Add(tc.waited))
			set := settings()
			set.CloudWaitTimeout = time.Hour
			in := Input{Target: target(), Settings: set, Workload: workloadClient(t), Cloud: cloud, Policy: &asker{}}
			res := (&Engine{Clock: clk}).Step(context.Background(), in, st)
			if tc.done {
				if st.Phase == v1alpha1.DeorbitPhaseWaitForCloud {
					t.Fatalf("still waiting with nothing left: next in %s", res.Next.Sub(clk.Now()))
				}
				return
			}
			if st.Phase != v1alpha1.DeorbitPhaseWaitForCloud {
				t.Fatalf("phase %s, want WaitForCloud", st.Phase)
			}
			if got := res.Next.Sub(clk.Now()); got != tc.wantIn {
				t.Errorf("next look in %s, want %s", got, tc.wantIn)
			}
		})
	}
}

// An operator killed while its deletes were in flight recorded none of them: the status a fresh engine
// resumes from shows the resource pending (or not at all), and the cloud shows what the lost delete did.
// A delete the cloud is carrying out (or has carried out) is waited on, never sent again; one the cloud
// failed (error_deleting) is sent again.
func TestSweepAfterKill(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	meta := map[string]string{ccm.MetadataCluster: "c1"}
	for _, tc := range []struct {
		name    string
		vol     *openstack.Volume       // in the cloud (nil: none)
		lb      *openstack.LoadBalancer // in the cloud (nil: none)
		tracked bool                    // the status shows them Pending, never attempted
		deletes int                     // DELETEs the fresh engine sends
	}{
		{name: "volume deleting, untracked", vol: &openstack.Volume{ID: "v", Status: "deleting", Metadata: meta}},
		{name: "volume deleting, tracked", vol: &openstack.Volume{ID: "v", Status: "deleting", Metadata: meta}, tracked: true},
		{name: "volume gone, tracked", tracked: true},
		{name: "volume error_deleting: the cloud's delete failed, sent again", vol: &openstack.Volume{ID: "v", Status: "error_deleting", Metadata: meta}, tracked: true, deletes: 1},
		{name: "load balancer PENDING_DELETE, untracked", lb: &openstack.LoadBalancer{ID: "lb", Name: ccm.LoadBalancerName("c1", "app", "web"), ProvisioningStatus: "PENDING_DELETE"}},
		{name: "load balancer PENDING_DELETE, tracked", lb: &openstack.LoadBalancer{ID: "lb", Name: ccm.LoadBalancerName("c1", "app", "web"), ProvisioningStatus: "PENDING_DELETE"}, tracked: true},
		{name: "load balancer listed DELETED, untracked", lb: &openstack.LoadBalancer{ID: "lb", Name: ccm.LoadBalancerName("c1", "app", "web"), ProvisioningStatus: "DELETED"}},
		{name: "load balancer listed DELETED, tracked", lb: &openstack.LoadBalancer{ID: "lb", Name: ccm.LoadBalancerName("c1", "app", "web"), ProvisioningStatus: "DELETED"}, tracked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := newMemCloud()
			st := &v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseSweep, StartTime: &metav1.Time{Time: start}, PhaseStartTime: &metav1.Time{Time: start}}
			if tc.vol != nil {
				cloud.vols[tc.vol.ID] = tc.vol
			}
			if tc.lb != nil {
				cloud.lbs[tc.lb.ID] = tc.lb
			}
			if tc.tracked {
				st.Resources = append(st.Resources, v1alpha1.DeorbitResource{Type: v1alpha1.DeorbitVolume, ID: "v", State: v1alpha1.DeorbitPending},
					v1alpha1.DeorbitResource{Type: v1alpha1.DeorbitLoadBalancer, ID: "lb", Name: ccm.LoadBalancerName("c1", "app", "web"), State: v1alpha1.DeorbitPending})
			}
			clk := clocktesting.NewFakeClock(start)
			a := &asker{}
			in := Input{Target: target(), Settings: settings(), Workload: workloadClient(t), Cloud: cloud, Policy: a}
			res, steps := run(t, &Engine{Clock: clk, Rand: func() float64 { return 0 }}, clk, in, st, 50, nil)
			if !res.Release || st.Phase != v1alpha1.DeorbitPhaseDone {
				t.Fatalf("after %d steps: phase %s, last error %q, resources %+v", steps, st.Phase, st.LastError, st.Resources)
			}
			n := 0
			for _, d := range cloud.deletes {
				n += d
			}
			if n != tc.deletes {
				t.Errorf("%d DELETEs sent (%v), want %d", n, cloud.deletes, tc.deletes)
			}
		})
	}
}

// The Services' chain lists Services in the snapshots' and claims' steps until every Service it found is
// deleting; then those steps list claims only, and the LoadBalancerServices phase lists afresh: a Service
// made after the chain was issued is deleted there.
func TestServicesChainListsUntilIssued(t *testing.T) {
	for _, tc := range []struct {
		name     string
		services int
		late     bool // a Service appears after the first step
		// wantLists: the Service lists of the whole run.
		wantLists int
	}{
		// One in the first step (which issues the chain), one in the LoadBalancerServices phase.
		{name: "Services issued at the first step", services: 2, wantLists: 2},
		// The LoadBalancerServices phase finds it pending, deletes it, and lists again to complete.
		{name: "a Service made later is deleted by the LoadBalancerServices phase", services: 2, late: true, wantLists: 3},
		// Nothing tracked: nothing proves the chain issued, it lists in each of the claims' steps.
		{name: "no Services: listed every step", services: 0, wantLists: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := newMemCloud()
			objs := boundClaims(cloud, 8)
			for i := 0; i < tc.services; i++ {
				id, svc := fmt.Sprintf("lb%d", i), fmt.Sprintf("web%d", i)
				cloud.lbs[id] = &openstack.LoadBalancer{ID: id, Name: ccm.LoadBalancerName("c1", "app", svc), ProvisioningStatus: "ACTIVE"}
				objs = append(objs, lbService("app", svc, id))
			}
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			lists := 0
			wl := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					if _, ok := l.(*corev1.ServiceList); ok {
						lists++
					}
					return c.List(ctx, l, opts...)
				}}).Build()
			set := settings()
			set.Budget = 2
			a := &asker{}
			in := Input{Target: target(), Settings: set, Workload: wl, Cloud: cloud, Policy: a}
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e := &Engine{Clock: clk, Rand: func() float64 { return 0 }}
			st := &v1alpha1.DeorbitStatus{}
			res, steps := run(t, e, clk, in, st, 100, func(i int, in *Input) {
				if tc.late && i == 1 {
					cloud.lbs["lb-late"] = &openstack.LoadBalancer{ID: "lb-late", Name: ccm.LoadBalancerName("c1", "app", "late"), ProvisioningStatus: "ACTIVE"}
					if err := wl.Create(context.Background(), lbService("app", "late", "lb-late")); err != nil {
						t.Fatal(err)
					}
				}
			})
			if !res.Release || st.Phase != v1alpha1.DeorbitPhaseDone {
				t.Fatalf("after %d steps: phase %s, last error %q", steps, st.Phase, st.LastError)
			}
			if lists != tc.wantLists {
				t.Errorf("%d Service lists in %d steps, want %d", lists, steps, tc.wantLists)
			}
			if tc.late && a.asked[VerbDeleteService+" app/late"] != 1 {
				t.Errorf("the late Service was asked %d times, want once", a.asked[VerbDeleteService+" app/late"])
			}
			for id, n := range cloud.deletes {
				if n != 1 {
					t.Errorf("%s deleted %d times", id, n)
				}
			}
		})
	}
}

// An operator killed after its delete of a claim or a Service was sent, before it recorded it: the
// status shows them pending, the workload cluster no longer shows them (the claim's PersistentVolume
// released or gone, the Service gone). The fresh engine counts them gone and goes on, asking nothing again.
func TestWorkloadAfterKill(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		objs []client.Object
	}{
		{name: "claim's volume released", objs: []client.Object{cinderPV("pv-v1", "v1", "app", "data", corev1.PersistentVolumeReclaimDelete, corev1.VolumeReleased)}},
		{name: "claim's volume gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := newMemCloud()
			st := &v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseClaims, StartTime: &metav1.Time{Time: start}, PhaseStartTime: &metav1.Time{Time: start},
				Resources: []v1alpha1.DeorbitResource{
					{Type: v1alpha1.DeorbitService, ID: "app/web", Name: "web", State: v1alpha1.DeorbitPending},
					{Type: v1alpha1.DeorbitClaim, ID: "app/data", Name: "pv-v1", State: v1alpha1.DeorbitPending},
					{Type: v1alpha1.DeorbitVolume, ID: "v1", Name: "pv-v1", State: v1alpha1.DeorbitPending},
				}}
			clk := clocktesting.NewFakeClock(start)
			a := &asker{}
			in := Input{Target: target(), Settings: settings(), Workload: workloadClient(t, tc.objs...), Cloud: cloud, Policy: a}
			res, steps := run(t, &Engine{Clock: clk, Rand: func() float64 { return 0 }}, clk, in, st, 50, nil)
			if !res.Release || st.Phase != v1alpha1.DeorbitPhaseDone {
				t.Fatalf("after %d steps: phase %s, last error %q, resources %+v", steps, st.Phase, st.LastError, st.Resources)
			}
			if a.asked[VerbDeletePVC+" app/data"]+a.asked[VerbDeleteService+" app/web"] != 0 {
				t.Errorf("asked again: %v", a.asked)
			}
		})
	}
}

// The sweep's guard (an uncached list of every VitalsCluster) is asked only where the sweep would delete, at
// most once a step, and not at all in the earlier phases.
func TestSweepGuardAsked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		why       string
		err       error
		wantPhase string
		wantState string // of v-orphan
	}{
		{name: "no other cluster", wantPhase: v1alpha1.DeorbitPhaseDone, wantState: v1alpha1.DeorbitGone},
		{name: "another cluster", why: "VitalsCluster other/c1 names the same cloud cluster", wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantState: v1alpha1.DeorbitUnproven},
		{name: "the list fails", err: errors.New("connection refused"), wantPhase: v1alpha1.DeorbitPhaseGaveUp, wantState: v1alpha1.DeorbitUnproven},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, wl := fixture(t)
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			st := &v1alpha1.DeorbitStatus{}
			step, asked := 0, map[int]int{}
			var phases []string
			in := Input{Target: target(), Settings: settings(), Workload: wl, Cloud: cloud, Policy: &asker{},
				SweepGuard: func(context.Context) (string, error) {
					asked[step]++
					phases = append(phases, st.Phase)
					return tc.why, tc.err
				}}
			in.Settings.GiveUpAfter = time.Hour
			res, _ := run(t, &Engine{Clock: clk, Rand: func() float64 { return 0.5 }}, clk, in, st, 500, func(i int, _ *Input) { step = i })
			if st.Phase != tc.wantPhase || !res.Release {
				t.Fatalf("phase %s, release %v; want %s", st.Phase, res.Release, tc.wantPhase)
			}
			if s := state(st, v1alpha1.DeorbitVolume, "v-orphan"); s != tc.wantState {
				t.Errorf("v-orphan state %s, want %s", s, tc.wantState)
			}
			if len(phases) == 0 {
				t.Fatal("the guard was never asked")
			}
			for _, p := range phases {
				if p != v1alpha1.DeorbitPhaseSweep {
					t.Errorf("the guard asked in phase %s, want in the sweep only", p)
				}
			}
			for i, n := range asked {
				if n > 1 {
					t.Errorf("step %d asked the guard %d times, want once at most", i, n)
				}
			}
		})
	}
}

// wantNotProven asserts the report's list of resources not proven the cluster's ("type id", in order).
func wantNotProven(t *testing.T, st *v1alpha1.DeorbitStatus, want ...string) {
	t.Helper()
	var got []string
	for _, d := range st.NotProven {
		got = append(got, d.Type+" "+d.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("not proven %v, want %v", got, want)
	}
}

// TestCapResources: status.deorbit.resources never holds more than v1alpha1.MaxDeorbitResources entries; the
// least important go first (gone, then kept, then pending; deleting and failed ones last), the order of the
// rest stays, and the overflow is counted (done ones for good, the others for the step) and in the counts.
func TestCapResources(t *testing.T) {
	const max = v1alpha1.MaxDeorbitResources
	res := func(state, lastError string, n int, prefix string) []v1alpha1.DeorbitResource {
		out := make([]v1alpha1.DeorbitResource, n)
		for i := range out {
			out[i] = v1alpha1.DeorbitResource{Type: v1alpha1.DeorbitVolume, ID: fmt.Sprintf("%s-%04d", prefix, i), State: state, LastError: lastError}
		}
		return out
	}
	failed := func(n int) []v1alpha1.DeorbitResource {
		out := res(v1alpha1.DeorbitPending, "Cinder answered 500", n, "fail")
		for i := range out {
			out[i].Attempts = 2
		}
		return out
	}
	cat := func(parts ...[]v1alpha1.DeorbitResource) []v1alpha1.DeorbitResource { return slices.Concat(parts...) }
	countOf := func(rs []v1alpha1.DeorbitResource, prefix string) int {
		n := 0
		for _, r := range rs {
			if strings.HasPrefix(r.ID, prefix+"-") {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name      string
		rs        []v1alpha1.DeorbitResource
		before    *v1alpha1.DeorbitOmitted
		want      map[string]int // entries left by prefix
		omitted   *v1alpha1.DeorbitOmitted
		total     int32
		done      int32
		remaining int32
	}{
		{name: "within the cap: nothing left out", rs: cat(res(v1alpha1.DeorbitGone, "", 10, "gone"), res(v1alpha1.DeorbitPending, "", 5, "pend")),
			want: map[string]int{"gone": 10, "pend": 5}, total: 15, done: 10, remaining: 5},
		{name: "gone ones go first", rs: cat(res(v1alpha1.DeorbitGone, "", 300, "gone"), res(v1alpha1.DeorbitKept, "", 100, "kept"), res(v1alpha1.DeorbitPending, "", max-200, "pend")),
			want: map[string]int{"gone": 100, "kept": 100, "pend": max - 200}, omitted: &v1alpha1.DeorbitOmitted{Done: 200},
			total: int32(max + 200), done: 400, remaining: int32(max - 200)},
		{name: "then kept, then pending, the latest first; failed and deleting stay",
			rs: cat(res(v1alpha1.DeorbitPending, "", 600, "pend"), res(v1alpha1.DeorbitGone, "", 50, "gone"), res(v1alpha1.DeorbitKept, "", 50, "kept"),
				res(v1alpha1.DeorbitDeleting, "", 400, "del"), failed(max-700)),
			want:    map[string]int{"pend": 300, "gone": 0, "kept": 0, "del": 400, "fail": max - 700},
			omitted: &v1alpha1.DeorbitOmitted{Done: 100, Remaining: 300}, total: int32(max + 400), done: 100, remaining: int32(max + 300)},
		{name: "earlier omissions carry on, the step's remaining ones do not",
			rs:     cat(res(v1alpha1.DeorbitGone, "", 10, "gone"), res(v1alpha1.DeorbitPending, "", max, "pend")),
			before: &v1alpha1.DeorbitOmitted{Done: 7, Remaining: 3},
			want:   map[string]int{"gone": 0, "pend": max}, omitted: &v1alpha1.DeorbitOmitted{Done: 17}, total: int32(max + 17), done: 17, remaining: int32(max)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.DeorbitStatus{Resources: slices.Clone(tc.rs), ResourcesOmitted: tc.before}
			s := &step{st: st}
			s.capResources()
			s.capResources() // twice in a step (the give-up, then the result): counted once
			s.countAll()
			if len(st.Resources) > max {
				t.Fatalf("%d entries, more than %d", len(st.Resources), max)
			}
			for prefix, n := range tc.want {
				if got := countOf(st.Resources, prefix); got != n {
					t.Errorf("%d entries %s-*, want %d", got, prefix, n)
				}
			}
			// the order of what stays is the order it was tracked in
			pos := map[string]int{}
			for i, r := range tc.rs {
				pos[r.ID] = i
			}
			for i := 1; i < len(st.Resources); i++ {
				if pos[st.Resources[i-1].ID] > pos[st.Resources[i].ID] {
					t.Fatalf("entries reordered: %s before %s", st.Resources[i-1].ID, st.Resources[i].ID)
				}
			}
			if !reflect.DeepEqual(st.ResourcesOmitted, tc.omitted) {
				t.Errorf("resourcesOmitted %+v, want %+v", st.ResourcesOmitted, tc.omitted)
			}
			if c := st.Counts; c.Total != tc.total || c.Done != tc.done || c.Remaining != tc.remaining {
				t.Errorf("counts %+v, want total %d done %d remaining %d", c, tc.total, tc.done, tc.remaining)
			}
		})
	}
}

// TestStepCapped: a sweep of more volumes than status.deorbit.resources may list writes at most
// v1alpha1.MaxDeorbitResources entries at every step, deletes every volume exactly once (a volume left out
// before anything was done to it is found again by the next list), and counts every one of them.
func TestStepCapped(t *testing.T) {
	const n = v1alpha1.MaxDeorbitResources + 500
	cloud := newMemCloud()
	for i := range n {
		id := fmt.Sprintf("v-%05d", i)
		cloud.vols[id] = &openstack.Volume{ID: id, Status: "available", Metadata: map[string]string{ccm.MetadataCluster: "c1"}}
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	set := settings()
	set.Budget = 300
	in := Input{Target: target(), Settings: set, Workload: workloadClient(t), Cloud: cloud, Policy: &asker{}}
	st := &v1alpha1.DeorbitStatus{}
	e := &Engine{Clock: clk, Rand: func() float64 { return 0 }, Workers: 8}
	capped := false
	res, steps := run(t, e, clk, in, st, 500, func(int, *Input) {
		if len(st.Resources) > v1alpha1.MaxDeorbitResources {
			t.Fatalf("status.deorbit.resources holds %d entries, more than %d", len(st.Resources), v1alpha1.MaxDeorbitResources)
		}
		capped = capped || st.ResourcesOmitted != nil
	})
	if !res.Release || st.Phase != v1alpha1.DeorbitPhaseDone {
		t.Fatalf("after %d steps: phase %s, last error %q", steps, st.Phase, st.LastError)
	}
	if !capped || len(st.Resources) > v1alpha1.MaxDeorbitResources {
		t.Errorf("never capped (%v) or %d entries at the end", capped, len(st.Resources))
	}
	if len(cloud.vols) != 0 {
		t.Errorf("%d volumes left", len(cloud.vols))
	}
	for id, k := range cloud.deletes {
		if k != 1 {
			t.Errorf("%s deleted %d times", id, k)
		}
	}
	if st.Counts.Total != n || st.Counts.Done != n || st.Counts.Remaining != 0 {
		t.Errorf("counts %+v, want %d done of %d; omitted %+v", st.Counts, n, n, st.ResourcesOmitted)
	}
}

// The engine takes the keep ledger from the workload cluster at the teardown's first step when none was recorded
// since it started (`vitals deorbit` has no record; the operator's may predate the last marker): a kept claim's
// volume is kept after the workload cluster went away, and a ledger older than the teardown is taken again.
func TestStepTakesLedger(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		seen *v1alpha1.DeorbitSeen
	}{
		{name: "no ledger recorded"},
		// v-orphan's Retain PersistentVolume was deleted by hand since: what the earlier ledger kept stays kept.
		{name: "a ledger recorded before the teardown, without the marker", seen: &v1alpha1.DeorbitSeen{KeepTime: &metav1.Time{Time: start.Add(-time.Hour)},
			Keep: []v1alpha1.DeorbitKeepEntry{{Type: v1alpha1.DeorbitVolume, ID: "v-orphan", Name: "pv-gone", Why: "persistent volume pv-gone has reclaim policy Retain"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, wl := fixture(t)
			var pvc corev1.PersistentVolumeClaim
			if err := wl.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "data"}, &pvc); err != nil {
				t.Fatal(err)
			}
			metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, v1alpha1.AnnotationKeep, "True")
			if err := wl.Update(context.Background(), &pvc); err != nil {
				t.Fatal(err)
			}
			clk := clocktesting.NewFakeClock(start)
			a := &asker{outcome: remediation.Allowed}
			in := Input{Target: target(), Settings: settings(), Workload: wl, Cloud: cloud, Policy: a}
			in.Settings.UnreachableGracePeriod = 0
			e := &Engine{Clock: clk, Rand: func() float64 { return 0.5 }, Workers: 3}
			st := &v1alpha1.DeorbitStatus{Seen: tc.seen}
			// The first step reads the ledger, then the workload cluster goes: its phases are skipped.
			run(t, e, clk, in, st, 500, func(i int, in *Input) {
				if i == 1 {
					in.Workload, in.WorkloadErr, st.Phase = nil, errors.New("connection refused"), v1alpha1.DeorbitPhaseSnapshots
				}
			})
			if st.Seen == nil || st.Seen.KeepTime == nil || !st.Seen.KeepTime.Time.Equal(start) {
				t.Fatalf("seen %+v: want the ledger taken at the first step", st.Seen)
			}
			if !slices.ContainsFunc(st.Seen.Keep, func(k v1alpha1.DeorbitKeepEntry) bool { return k.ID == "v-bound" }) {
				t.Errorf("ledger %+v lacks v-bound, whose claim carries the keep marker", st.Seen.Keep)
			}
			if _, ok := cloud.vols["v-bound"]; !ok {
				t.Errorf("v-bound, whose claim carries the keep marker, was deleted")
			}
			if s := state(st, v1alpha1.DeorbitVolume, "v-bound"); s != v1alpha1.DeorbitKept {
				t.Errorf("v-bound: state %s, want Kept", s)
			}
			if tc.seen != nil {
				if _, ok := cloud.vols["v-orphan"]; !ok || state(st, v1alpha1.DeorbitVolume, "v-orphan") != v1alpha1.DeorbitKept {
					t.Errorf("v-orphan, kept by the earlier ledger: in the cloud %v, state %s; want kept", ok, state(st, v1alpha1.DeorbitVolume, "v-orphan"))
				}
			}
		})
	}
}

package deorbit_test

// Fencing at the moment of the write (issue 27), on deorbit's engine as the operator runs it: the
// remediation policy of the replica decides, tenancy's scoped cloud sends, against the real kube-apiserver
// (shard Leases, the VitalsCluster read live) and the OpenStack simulator, whose handler logs every write
// that reaches it (the wire). The engine's clock is a fake one: a replica "frozen" for 90 seconds costs no
// wall time, and nothing here asserts a duration.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/sharding"
	"github.com/vitalsproject/vitals/tenancy"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// wire is the simulator's handler with a log of every write that reached it, at the fake clock's time.
type wire struct {
	next  http.Handler
	clock *clocktesting.FakeClock

	mu     sync.Mutex
	writes []write
	// hook runs for each write before the simulator handles it (nil: none).
	hook func(r *http.Request)
}

type write struct {
	method, path string
	at           time.Time
}

func (w *wire) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !strings.HasSuffix(r.URL.Path, "/auth/tokens") {
		w.mu.Lock()
		w.writes = append(w.writes, write{r.Method, r.URL.Path, w.clock.Now()})
		hook := w.hook
		w.mu.Unlock()
		if hook != nil {
			hook(r)
		}
	}
	w.next.ServeHTTP(rw, r)
}

// since returns the writes after the first n.
func (w *wire) since(n int) []write {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]write(nil), w.writes[n:]...)
}

func (w *wire) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// gate freezes the replica at one point of its write path: it holds the call (or request) that reaches it
// until released.
type gate struct {
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

func (g *gate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.reached, g.release = true, make(chan struct{}), make(chan struct{})
}

func (g *gate) pass() {
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return
	}
	g.armed = false
	reached, release := g.reached, g.release
	g.mu.Unlock()
	close(reached)
	<-release
}

// gatedCloud freezes the replica after the policy allowed the route removal and before the write
// wrapper (tenancy's scoped cloud) is called: where the replica was frozen.
type gatedCloud struct {
	tenancy.Cloud
	g *gate
}

func (c gatedCloud) RemoveRoutes(ctx context.Context, id string, rs []openstack.Route) (*openstack.Router, error) {
	c.g.pass()
	return c.Cloud.RemoveRoutes(ctx, id, rs)
}

func (c gatedCloud) SetRoutes(ctx context.Context, id string, rs []openstack.Route, rev int) (*openstack.Router, error) {
	c.g.pass()
	return c.Cloud.SetRoutes(ctx, id, rs, rev)
}

// gatedTransport freezes the replica inside the HTTP client, after the write wrapper let the request go.
type gatedTransport struct {
	next http.RoundTripper
	g    *gate
}

func (t gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/routers/") {
		t.g.pass()
	}
	return t.next.RoundTrip(r)
}

// cloudFixture is the simulator with one seeded cluster, and the cluster's scoped cloud over a gated
// transport.
type cloudFixture struct {
	sim    *cloudsim.Sim
	wire   *wire
	seeded *cloudsim.SeededCluster
	scope  *tenancy.Scope
	cloud  *gate // gate in the scoped cloud's caller
	http   *gate // gate in the HTTP client
}

func newCloudFixture(t *testing.T, clk *clocktesting.FakeClock, cs cloudsim.ClusterSeed) *cloudFixture {
	t.Helper()
	sim, err := cloudsim.New(cloudsim.Options{Seed: 27})
	if err != nil {
		t.Fatal(err)
	}
	f := &cloudFixture{sim: sim, wire: &wire{next: sim.Handler(), clock: clk}, cloud: &gate{}, http: &gate{}}
	ts := httptest.NewServer(f.wire)
	t.Cleanup(ts.Close)
	if f.seeded, err = sim.SeedCluster(cs); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.CreateUser("tenant", "tenant-password", false, f.seeded.ProjectID); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	auth := openstack.Auth{}
	auth.Options.IdentityEndpoint, auth.Options.Username, auth.Options.Password = ts.URL+"/v3", "tenant", "tenant-password"
	auth.Options.DomainName, auth.Options.TenantName = "Default", cs.Project
	conn, err := openstack.Connect(ctx, openstack.Config{Auth: auth, QPS: -1, HTTPTimeout: 30 * time.Second,
		Transport: gatedTransport{next: http.DefaultTransport.(*http.Transport).Clone(), g: f.http}})
	if err != nil {
		t.Fatal(err)
	}
	if f.scope, err = tenancy.ScopeOf(ctx, conn, v1alpha1.OpenStackSpec{RouterID: f.seeded.RouterID}, "the test's credentials"); err != nil {
		t.Fatal(err)
	}
	return f
}

// kubeFixture is a namespace of the real API server with one VitalsCluster, and a reader of the API server.
type kubeFixture struct {
	cfg    *rest.Config
	ns     string
	c      client.Client
	cs     kclient.Interface
	reader client.Reader
}

func newKubeFixture(t *testing.T) *kubeFixture {
	t.Helper()
	ctrllog.SetLogger(logr.Discard()) // the policy logs each decision through controller-runtime's logger
	cfg := testenv.Kube(t)
	_, here, _, _ := runtime.Caller(0)
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(filepath.Dir(here), "..", "..", "deploy", "crds")},
		ErrorIfPathMissing: true, MaxTime: time.Minute, PollInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("install the VitalsCluster CRD: %v", err)
	}
	scheme := clientgoscheme.Scheme
	_ = v1alpha1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := "fencing-" + hex.EncodeToString(b)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = c.DeleteAllOf(ctx, &v1alpha1.VitalsCluster{}, client.InNamespace(ns))
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	// the policy's reads (its seeding list, the fences' live reads) stay in the test's namespace
	return &kubeFixture{cfg: cfg, ns: ns, c: c, cs: cs, reader: client.NewNamespacedClient(c, ns)}
}

func (k *kubeFixture) cluster(t *testing.T, name, routerID string) *v1alpha1.VitalsCluster {
	t.Helper()
	c := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: name},
		Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{RouterID: routerID, SubnetID: "subnet"},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"}},
	}
	if err := k.c.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

func input(c *v1alpha1.VitalsCluster, f *cloudFixture, cl deorbit.Cloud, p deorbit.Asker) deorbit.Input {
	return deorbit.Input{
		Target: deorbit.Target{Key: c.Namespace + "/" + c.Name, ClusterName: c.Name, RouterID: f.seeded.RouterID,
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")}},
		Settings: deorbit.Settings{GiveUpAfter: 24 * time.Hour, UnreachableGracePeriod: time.Minute, CloudWaitTimeout: time.Minute, Budget: 50},
		Cloud:    cl, Policy: p, SkipWorkload: "the test has no workload cluster",
	}
}

// TestFrozenReplicaSendsNothingAfterItsRangeIsLost: replica a holds the cluster's shard range, its policy
// allows the removal of a route, and a freezes (GC pause, VM freeze, SIGSTOP) for every length from 1 to
// 90 seconds (the issue asks 5 to 90; the shorter ones show that writes do go out), at each of two points
// (just before the write wrapper, and inside the HTTP client) and at three phases of its renewal cycle
// (just renewed, half a renew interval later, just before the next renewal was due), while replica b
// goes on and takes the range over once a's Lease went unrenewed for a lease duration: freezes that end
// within a's fenced validity, within its lease, and after b took over. When a resumes, no write of a
// reaches the cloud after a's fenced validity ran out: it stopped acting before b could begin. Writes
// within the validity do go out, at each point and phase (the test is not vacuous): before the wrapper,
// those that resume within the validity; inside the HTTP client, those frozen for less than the write
// timeout (fencing.DefaultWriteTimeout, 5 s), which bounds a write that already went through the wrapper.
func TestFrozenReplicaSendsNothingAfterItsRangeIsLost(t *testing.T) {
	const (
		lease  = 20 * time.Second
		renew  = 5 * time.Second
		margin = 8 * time.Second
	)
	k := newKubeFixture(t)
	clk := clocktesting.NewFakeClock(t0)
	f := newCloudFixture(t, clk, cloudsim.ClusterSeed{Project: "frozen", Name: "frozen", Nodes: 1})
	c := k.cluster(t, "frozen", f.seeded.RouterID)
	node := f.seeded.Nodes[0]
	route := cloudsim.Route{Destination: "198.19.200.0/24", NextHop: node.IP}
	cs, err := kclient.NewForConfig(k.cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		mode  string        // where a freezes: "cloud" (before the write wrapper) or "http" (in the HTTP client)
		phase time.Duration // how long after a's last renewal the freeze begins
	}{
		{"cloud", 0},
		{"cloud", renew / 2},
		{"cloud", renew - time.Millisecond},
		{"http", 0},
		{"http", renew / 2},
		{"http", renew - time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%s/phase=%s", tc.mode, tc.phase), func(t *testing.T) {
			ctx := t.Context()
			var sent, refused, takeovers int
			for l := time.Second; l <= 90*time.Second; l += time.Second {
				start := clk.Now()
				replica := func(id string) *sharding.Coordinator {
					r, err := sharding.New(sharding.Options{Leases: cs.CoordinationV1(), Namespace: k.ns,
						Name:     fmt.Sprintf("%s-%d-%d", tc.mode, tc.phase/time.Millisecond, l/time.Second),
						Identity: id, Ranges: 1, LeaseDuration: lease, RenewInterval: renew, SafetyMargin: margin, Clock: clk, Logger: log})
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				a, b := replica("a"), replica("b")
				a.Round(ctx)
				b.Round(ctx) // b is a member and has seen a's range Lease
				if !a.Holds(c.UID) || b.Holds(c.UID) {
					t.Fatalf("frozen %s: before the freeze a holds %v, b %v", l, a.Holds(c.UID), b.Holds(c.UID))
				}
				clk.Step(tc.phase) // a's next renewal is not due yet
				policy, err := remediation.New(remediation.Options{Shard: a, Seed: k.reader, Clock: clk})
				if err != nil {
					t.Fatal(err)
				}
				pass := policy.Begin(ctx, c, deorbit.Name, nil, remediation.Scope{})
				if err := f.sim.SetRoutes(f.seeded.RouterID, []cloudsim.Route{route}); err != nil {
					t.Fatal(err)
				}
				var cl deorbit.Cloud = f.scope.Cloud
				g := f.http
				if tc.mode == "cloud" {
					g, cl = f.cloud, gatedCloud{Cloud: f.scope.Cloud, g: f.cloud}
				}
				g.arm()
				mark := f.wire.count()
				done := make(chan struct{})
				go func() {
					defer close(done)
					(&deorbit.Engine{Clock: clk, Workers: 1}).Step(ctx, input(c, f, cl, pass), &v1alpha1.DeorbitStatus{})
				}()
				select {
				case <-g.reached:
				case <-done:
					t.Fatalf("frozen %s: the step ended without trying to remove the route", l)
				case <-time.After(time.Minute):
					t.Fatalf("frozen %s: the step never reached the write", l)
				}
				// a is frozen for l, the clock moving a renew interval at a time; b, which saw a's range
				// Lease before the freeze, runs a round once it could take the range over (the rounds
				// before that only renew its membership: left out, to keep the sweep fast)
				for frozen := time.Duration(0); frozen < l; {
					d := min(renew, l-frozen)
					clk.Step(d)
					frozen += d
					if clk.Since(start) >= lease && !b.Holds(c.UID) {
						b.Round(ctx)
					}
				}
				if b.Holds(c.UID) {
					takeovers++
				} else if clk.Since(start) >= lease {
					t.Fatalf("frozen %s: b did not take the range over after a lease duration", l)
				}
				close(g.release)
				<-done
				until := start.Add(lease - margin) // a renewed its range at start, and never since
				ws := f.wire.since(mark)
				for _, w := range ws {
					if !w.at.Before(until) {
						t.Errorf("frozen %s: %s %s reached the cloud %s after a's last renewal, %s after its fenced validity ran out (b holds the range: %v)",
							l, w.method, w.path, w.at.Sub(start), w.at.Sub(until), b.Holds(c.UID))
					}
					sent++
				}
				if len(ws) == 0 {
					refused++
				}
			}
			if sent == 0 || refused == 0 || takeovers == 0 {
				t.Fatalf("writes sent %d, steps without a write %d, takeovers %d: every case should have happened", sent, refused, takeovers)
			}
			t.Logf("%d writes within the validity, %d steps refused at the write, %d takeovers by b", sent, refused, takeovers)
		})
	}
}

// TestChangeMidStepHoldsTheNextDelete: a pause, an exclusion or a dry-run set on the cluster while a step
// is deleting (after its first delete reached the cloud) holds every later delete of that step: each
// write reads the cluster from the API server (one read serves the writes of the next second).
func TestChangeMidStepHoldsTheNextDelete(t *testing.T) {
	k := newKubeFixture(t)
	for _, tc := range []struct {
		name   string
		change func(c *v1alpha1.VitalsCluster, volumes []string)
		reason string
	}{
		{"pause", func(c *v1alpha1.VitalsCluster, _ []string) {
			c.Annotations = map[string]string{v1alpha1.AnnotationPaused: "true"}
		}, remediation.ReasonPaused},
		{"exclusion", func(c *v1alpha1.VitalsCluster, volumes []string) {
			c.Annotations = map[string]string{v1alpha1.AnnotationExclude: strings.Join(volumes, ",")}
		}, remediation.ReasonExcluded},
		{"dry run", func(c *v1alpha1.VitalsCluster, _ []string) { c.Spec.Remediation.DryRun = true }, remediation.ReasonDryRun},
		{"deorbit's dry run", func(c *v1alpha1.VitalsCluster, _ []string) { c.Spec.Controllers.Deorbit.DryRun = true }, remediation.ReasonDryRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			name := "mid-" + strings.NewReplacer(" ", "-", "'", "").Replace(tc.name)
			f := newCloudFixture(t, clk, cloudsim.ClusterSeed{Project: name, Name: name, Nodes: 1, Volumes: 4})
			if err := f.sim.SetRoutes(f.seeded.RouterID, nil); err != nil {
				t.Fatal(err)
			}
			c := k.cluster(t, name, f.seeded.RouterID)
			policy, err := remediation.New(remediation.Options{Seed: k.reader, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			pass := policy.Begin(t.Context(), c, deorbit.Name, nil, remediation.Scope{})
			var once sync.Once
			f.wire.hook = func(r *http.Request) {
				if r.Method != http.MethodDelete || !strings.Contains(r.URL.Path, "/volumes/") {
					return
				}
				once.Do(func() {
					// set on the API server while the first delete is in flight; the writes entered a
					// second later see it
					var cur v1alpha1.VitalsCluster
					if err := k.c.Get(context.Background(), client.ObjectKeyFromObject(c), &cur); err != nil {
						t.Error(err)
						return
					}
					tc.change(&cur, f.seeded.Volumes)
					if err := k.c.Update(context.Background(), &cur); err != nil {
						t.Error(err)
					}
					clk.Step(time.Second) // remediation.DefaultLiveMaxAge
				})
			}
			st := &v1alpha1.DeorbitStatus{}
			(&deorbit.Engine{Clock: clk, Workers: 1}).Step(t.Context(), input(c, f, f.scope.Cloud, pass), st)
			var deletes []string
			for _, w := range f.wire.since(0) {
				if w.method == http.MethodDelete && strings.Contains(w.path, "/volumes/") {
					deletes = append(deletes, w.path)
				}
			}
			if len(deletes) != 1 {
				t.Fatalf("%d volume deletes reached the cloud (%v), want the first only: the %s set after it holds the others", len(deletes), deletes, tc.name)
			}
			held := 0
			for _, l := range pass.Lines() {
				if l.Action == v1alpha1.ActionSkipped && l.Reason == tc.reason {
					held++
				}
			}
			if held != len(f.seeded.Volumes)-1 {
				t.Errorf("%d status lines held with reason %s, want %d: %+v", held, tc.reason, len(f.seeded.Volumes)-1, pass.Lines())
			}
		})
	}
}

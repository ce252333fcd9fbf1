package e2e

// The whole operator (controller-runtime manager, leader election on a real Lease, health server,
// Events) against the real kube-apiserver and the real cloud.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
)

type opRun struct {
	op   *operator.Operator
	reg  *prometheus.Registry
	done chan error
	stop context.CancelFunc
}

func opStart(t *testing.T, o operator.Options) *opRun {
	t.Helper()
	return opStartWith(t, o, nil)
}

// opStartWith is opStart with setup run on the wired operator before it starts (to add a controller).
func opStartWith(t *testing.T, o operator.Options, setup func(*operator.Operator)) *opRun {
	t.Helper()
	r := &opRun{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	o.Registry = r.reg
	o.AllowLoopbackWorkload = true // the test services listen on loopback
	if o.HealthAddr == "" {
		o.HealthAddr = "127.0.0.1:0"
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "127.0.0.1:0"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("replica", o.Identity)
	}
	op, err := operator.New(o)
	if err != nil {
		t.Fatalf("operator.New: %v", err)
	}
	r.op = op
	if setup != nil {
		setup(op)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- op.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Errorf("operator %s did not stop", o.Identity)
		}
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// probe GETs a health path and returns the status code and body (0 when unreachable).
func probe(addr, path string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestOperatorLeaderElectionAndRemoval(t *testing.T) {
	parallel(t)
	env := testenv.OpenStack(t)
	cfg, c, ns := opKube(t)
	auth, cloud, n := opCloudNet(t, env)
	sources := []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts}
	if env.Tier == testenv.TierFull {
		n.Server(cloud, 4)
		sources = append(sources, v1alpha1.AddressSourceServers)
	}
	n.Port(5)
	live := openstack.Route{Destination: "198.19.1.0/24", NextHop: n.IP(5)}
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: n.IP(99)}
	n.SetRoutes(live, orphan)

	base := operator.Options{
		RestConfig: cfg, Namespace: ns, LeaderElect: true, LeaderElectionNamespace: ns, LeaderElectionID: "vitals-operator-e2e",
		// A long renew deadline: after losing the Lease, replica a goes on believing it leads for up to
		// 45s, long enough for its liveness to say so.
		LeaseDuration: 60 * time.Second, RenewDeadline: 45 * time.Second, RetryPeriod: time.Second,
		Cloud: &auth, CheckInterval: 10 * time.Second, CheckTimeout: 10 * time.Second, ComponentDeadline: 30 * time.Second,
		TrustedNamespaces: []string{ns}, // the cluster below names no credentials Secret
	}
	oa := base
	oa.Identity = "replica-a"
	a := opStart(t, oa)
	opEventually(t, 2*time.Minute, "replica a leads", func() (bool, string) { return a.op.Elected(), "not elected" })
	ob := base
	ob.Identity = "replica-b"
	b := opStart(t, ob)

	cl := &v1alpha1.VitalsCluster{
		// Passes a second apart: a proof age of a few seconds, not the default five minutes, below the
		// floor of one minute.
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo", Annotations: map[string]string{remediation.AnnotationUnsafeShortProofAge: "true"}},
		Spec: v1alpha1.ClusterSpec{
			OpenStack:   v1alpha1.OpenStackSpec{RouterID: n.Router, ProjectID: cloud.ProjectID(), SubnetID: n.Subnet},
			PodCIDRs:    []v1alpha1.CIDR{"198.19.0.0/16"},
			Remediation: v1alpha1.RemediationSpec{MinProofAge: &metav1.Duration{Duration: 3 * time.Second}},
			Controllers: v1alpha1.ControllersSpec{RouteGC: v1alpha1.RouteGCSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Second}},
				AddressSources: sources,
			}},
		},
	}
	if err := c.Create(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	opEventually(t, 5*time.Minute, "the orphaned route is removed", func() (bool, string) {
		rs := n.Routes()
		return !rs[orphan], "still there"
	})
	if !n.Routes()[live] {
		t.Fatalf("the live route was removed")
	}
	if b.op.Elected() {
		t.Fatalf("replica b leads too")
	}
	if got := testutil.CollectAndCount(b.reg, "vitals_routegc_passes_total"); got != 0 {
		t.Errorf("the standby replica ran %d pass series", got)
	}
	// The conditions of the clusters are exported by the leader only (a standby's cache holds the same).
	if got := testutil.CollectAndCount(b.reg, operator.ClusterConditionMetric); got != 0 {
		t.Errorf("the standby replica exports %d %s series", got, operator.ClusterConditionMetric)
	}
	// The route leaves Neutron before the leader, back from the call, counts it: the leader's metrics are
	// waited for, not read once.
	opEventually(t, time.Minute, "the leader's condition series, 3 per condition", func() (bool, string) {
		got := testutil.CollectAndCount(a.reg, operator.ClusterConditionMetric)
		return got > 0 && got%3 == 0, fmt.Sprintf("%d series", got)
	})
	opEventually(t, time.Minute, "vitals_routegc_routes_removed_total on the leader", func() (bool, string) {
		got := testutil.CollectAndCount(a.reg, "vitals_routegc_routes_removed_total")
		return got == 1, fmt.Sprintf("%d series", got)
	})
	// The removal is an Event in the API, recorded by the remediation policy.
	opEventually(t, time.Minute, "an ActionTaken event", func() (bool, string) {
		var evs eventsv1.EventList
		if err := c.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "ActionTaken" && e.Action == "RemoveRoute" && strings.Contains(e.Note, orphan.Destination) {
				return true, ""
			}
		}
		return false, "none among " + strings.Repeat(".", len(evs.Items))
	})
	// Both replicas are alive; the standby is alive too.
	for name, r := range map[string]*opRun{"a": a, "b": b} {
		opEventually(t, time.Minute, "replica "+name+" /livez", func() (bool, string) {
			code, body := probe(r.op.HealthAddr(), "/livez?verbose")
			return code == 200, body
		})
		if code, body := probe(r.op.HealthAddr(), "/alive"); code != 200 {
			t.Errorf("replica %s /alive = %d: %s", name, code, body)
		}
	}
	opEventually(t, time.Minute, "replica a /readyz", func() (bool, string) {
		code, body := probe(a.op.HealthAddr(), "/readyz?verbose")
		return code == 200, body
	})

	// Someone else takes the Lease: replica a, still believing it leads, is no longer alive.
	var lease coordinationv1.Lease
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "vitals-operator-e2e"}, &lease); err != nil {
		t.Fatal(err)
	}
	intruder := "intruder"
	now := metav1.NewMicroTime(time.Now())
	long := int32(600)
	lease.Spec.HolderIdentity, lease.Spec.RenewTime, lease.Spec.AcquireTime, lease.Spec.LeaseDurationSeconds = &intruder, &now, &now, &long
	if err := c.Update(context.Background(), &lease); err != nil {
		t.Fatal(err)
	}
	sawDead := false
	opEventually(t, 2*time.Minute, "replica a not alive, or stopped, after losing its Lease", func() (bool, string) {
		select {
		case err := <-a.done:
			a.done <- err
			return true, ""
		default:
		}
		code, body := probe(a.op.HealthAddr(), "/livez?verbose")
		if code >= 500 && strings.Contains(body, "leader-election") {
			sawDead = true
		}
		return sawDead, body
	})
	if !sawDead {
		t.Errorf("replica a stopped before its liveness reported the lost Lease")
	}
	select {
	case err := <-a.done:
		if err == nil || !strings.Contains(err.Error(), "leader election lost") {
			t.Errorf("replica a stopped with %v, want leader election lost", err)
		}
		a.done <- err
	case <-time.After(2 * time.Minute):
		t.Errorf("replica a kept running after losing its Lease")
	}
	if b.op.Elected() {
		t.Errorf("replica b took a Lease held by someone else")
	}
}

func TestOperatorReadinessFollowsKeystone(t *testing.T) {
	parallel(t)
	k := testenv.PrivateKeystone(t)
	cfg, _, ns := opKube(t)
	auth := opAuth(t, k.OpenStack())
	r := opStart(t, operator.Options{
		RestConfig: cfg, Namespace: ns, Identity: "keystone-test", Cloud: &auth,
		CheckInterval: 5 * time.Second, CheckTimeout: 5 * time.Second, ComponentDeadline: 30 * time.Second,
	})
	addr := r.op.HealthAddr()
	opEventually(t, 3*time.Minute, "/readyz 200 with Keystone up", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		return code == 200, body
	})
	if code, body := probe(addr, "/ready"); code != 200 {
		t.Errorf("/ready = %d: %s", code, body)
	}
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	opEventually(t, 3*time.Minute, "/readyz failing (5xx) naming keystone with Keystone stopped", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		if code, lbody := probe(addr, "/livez?verbose"); code != 200 {
			t.Fatalf("/livez = %d while Keystone is down: %s", code, lbody)
		}
		return code >= 500 && strings.Contains(body, "[-]keystone"), body
	})
	if code, body := probe(addr, "/readyz/keystone"); code < 500 {
		t.Errorf("/readyz/keystone = %d: %s", code, body)
	}
	// Liveness holds for a while with Keystone down.
	for range 10 {
		if code, body := probe(addr, "/livez"); code != 200 {
			t.Fatalf("/livez = %d while Keystone is down: %s", code, body)
		}
		if code, body := probe(addr, "/alive"); code != 200 {
			t.Fatalf("/alive = %d while Keystone is down: %s", code, body)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	opEventually(t, 4*time.Minute, "/readyz 200 again with Keystone back", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		return code == 200, body
	})
}

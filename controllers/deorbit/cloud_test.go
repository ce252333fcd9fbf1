package deorbit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// realCloud holds the direct gophercloud clients the test sets the scene with (not through the proxy).
type realCloud struct {
	pc          *gophercloud.ProviderClient
	bs, lb, net *gophercloud.ServiceClient
	subnet      string
	otherSubnet string // another subnet of the same network
	env         testenv.OpenStackEnv
}

func newRealCloud(t *testing.T) *realCloud {
	t.Helper()
	e := testenv.RequireFull(t)
	ctx := t.Context()
	pc, err := gcos.AuthenticatedClient(ctx, e.AuthOptions())
	if err != nil {
		t.Fatal(err)
	}
	rc := &realCloud{pc: pc, env: e}
	if rc.bs, err = gcos.NewBlockStorageV3(pc, e.EndpointOpts()); err != nil {
		t.Fatal(err)
	}
	if rc.lb, err = gcos.NewLoadBalancerV2(pc, e.EndpointOpts()); err != nil {
		t.Fatal(err)
	}
	if rc.net, err = gcos.NewNetworkV2(pc, e.EndpointOpts()); err != nil {
		t.Fatal(err)
	}
	n, err := networks.Create(ctx, rc.net, networks.CreateOpts{Name: "deorbit-test"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), rc.net, n.ID).ExtractErr() })
	sn, err := subnets.Create(ctx, rc.net, subnets.CreateOpts{NetworkID: n.ID, CIDR: "10.77.0.0/24", IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	rc.subnet = sn.ID
	other, err := subnets.Create(ctx, rc.net, subnets.CreateOpts{NetworkID: n.ID, CIDR: "10.77.1.0/24", IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	rc.otherSubnet = other.ID
	return rc
}

func (rc *realCloud) volume(t *testing.T, name string, meta map[string]string) string {
	t.Helper()
	v, err := volumes.Create(t.Context(), rc.bs, volumes.CreateOpts{Size: 1, Name: name, Metadata: meta}, nil).Extract()
	if err != nil {
		t.Fatalf("create volume %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = volumes.Delete(context.Background(), rc.bs, v.ID, volumes.DeleteOpts{Cascade: true}).ExtractErr()
	})
	rc.await(t, "volume "+name, func() (string, error) {
		v, err := volumes.Get(t.Context(), rc.bs, v.ID).Extract()
		if err != nil {
			return "", err
		}
		return v.Status, nil
	}, "available")
	return v.ID
}

func (rc *realCloud) loadBalancer(t *testing.T, name string, tags []string) string {
	t.Helper()
	return rc.loadBalancerOn(t, rc.subnet, name, tags)
}

func (rc *realCloud) loadBalancerOn(t *testing.T, subnet, name string, tags []string) string {
	t.Helper()
	l, err := loadbalancers.Create(t.Context(), rc.lb, loadbalancers.CreateOpts{Name: name, VipSubnetID: subnet, Tags: tags}).Extract()
	if err != nil {
		t.Fatalf("create load balancer %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = loadbalancers.Delete(context.Background(), rc.lb, l.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	})
	rc.await(t, "load balancer "+name, func() (string, error) {
		l, err := loadbalancers.Get(t.Context(), rc.lb, l.ID).Extract()
		if err != nil {
			return "", err
		}
		return l.ProvisioningStatus, nil
	}, "ACTIVE")
	return l.ID
}

func (rc *realCloud) await(t *testing.T, what string, status func() (string, error), want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s, err := status()
		if err == nil && s == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %q (%v), want %s", what, s, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exists reports whether the real cloud still has the volume or load balancer (asked directly).
func (rc *realCloud) exists(t *testing.T, typ, id string) bool {
	t.Helper()
	var err error
	if typ == v1alpha1.DeorbitVolume {
		_, err = volumes.Get(t.Context(), rc.bs, id).Extract()
	} else {
		var l *loadbalancers.LoadBalancer
		l, err = loadbalancers.Get(t.Context(), rc.lb, id).Extract()
		if err == nil && l.ProvisioningStatus == "DELETED" {
			return false
		}
	}
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("get %s %s: %v", typ, id, err)
	}
	return true
}

func origin(endpoint string) (string, string) {
	u, _ := url.Parse(endpoint)
	return u.Scheme + "://" + u.Host, strings.TrimSuffix(u.Path, "/")
}

func randName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

type allow struct{}

func (allow) Ask(context.Context, remediation.Action) remediation.Decision {
	return remediation.Decision{Outcome: remediation.Allowed}
}
func (allow) Done(context.Context, remediation.Action, error) {}
func (allow) Fence(...remediation.Action) fencing.Fence       { return openFence }

// The engine against the real Cinder and Octavia (through the fault proxy) and a real kube-apiserver as
// the workload cluster: the claim and the Service go, Cinder's first two deletes of a swept volume
// answer 500 (retried: deleted once), a load balancer stays in PENDING_DELETE (deleted once, then the
// debris report names exactly it), and nothing that is not the cluster's is touched.
func TestEngineRealCloud(t *testing.T) {
	rc := newRealCloud(t)
	kube := testenv.PrivateKube(t)
	ctx := t.Context()
	cluster := randName("dt")
	meta := map[string]string{ccm.MetadataCluster: cluster}

	vBound := rc.volume(t, "pv-bound", meta)
	vOrphan := rc.volume(t, "orphan", meta)
	vOther := rc.volume(t, "other", map[string]string{ccm.MetadataCluster: cluster + "x"})
	vPlain := rc.volume(t, "plain", nil)
	lbWeb := rc.loadBalancer(t, ccm.LoadBalancerName(cluster, "app", "web"), nil)
	lbStuck := rc.loadBalancer(t, "renamed", []string{ccm.LoadBalancerName(cluster, "app", "gone")})
	lbOther := rc.loadBalancer(t, ccm.LoadBalancerName(cluster+"_x", "app", "web"), nil)
	// the cluster's name, on another subnet of the project: another cluster's (only the cluster's subnet counts)
	lbElsewhere := rc.loadBalancerOn(t, rc.otherSubnet, ccm.LoadBalancerName(cluster, "app", "elsewhere"), nil)

	// The workload cluster, as the provisioner and the cloud controller manager left it.
	wl, err := client.New(kube.Config(), client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := wl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-bound",
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceGi()}}}}
	if err := wl.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	pv := cinderPV("pv-bound", vBound, "app", "data", corev1.PersistentVolumeReclaimDelete, "")
	pv.Spec.ClaimRef.UID = pvc.UID
	pv.Spec.AccessModes = pvc.Spec.AccessModes
	pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resourceGi()}
	if err := wl.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = corev1.VolumeBound
	if err := wl.Status().Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if err := wl.Create(ctx, lbService("app", "web", lbWeb)); err != nil {
		t.Fatal(err)
	}

	// The cloud through the fault proxy.
	proxy, err := faultproxy.NewCloud(rc.env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	cinderOrigin, _ := origin(rc.bs.Endpoint)
	octaviaOrigin, _ := origin(rc.lb.Endpoint)
	cinder, err := proxy.Service(cinderOrigin)
	if err != nil {
		t.Fatal(err)
	}
	octavia, err := proxy.Service(octaviaOrigin)
	if err != nil {
		t.Fatal(err)
	}
	_, orphanPath := origin(rc.bs.ResourceBaseURL() + "volumes/" + vOrphan)
	if err := cinder.Add(faultproxy.FailTimes("orphan-500", http.MethodDelete, orphanPath, 2, faultproxy.Status(500, faultproxy.StyleNova, "boom"))); err != nil {
		t.Fatal(err)
	}
	_, stuckPath := origin(rc.lb.ResourceBaseURL() + "lbaas/loadbalancers/" + lbStuck)
	env := map[string]string{}
	for _, kv := range rc.env.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	env["OS_AUTH_URL"] = proxy.AuthURL()
	auth, err := openstack.AuthFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	conn, err := openstack.Connect(ctx, openstack.Config{Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	stuckBody := fmt.Sprintf(`{"loadbalancer": {"id": %q, "project_id": %q, "name": "renamed", "provisioning_status": "PENDING_DELETE", "operating_status": "ONLINE", "vip_subnet_id": %q, "tags": [%q]}}`,
		lbStuck, conn.ProjectID(), rc.subnet, ccm.LoadBalancerName(cluster, "app", "gone"))
	if err := octavia.Add(
		faultproxy.Rule{Name: "stuck-delete", Method: http.MethodDelete, Path: stuckPath, Fault: faultproxy.Fault{Kind: faultproxy.KindStatus, Status: http.StatusNoContent, Body: []byte{}}},
		faultproxy.Rule{Name: "stuck-get", Method: http.MethodGet, Path: stuckPath, Fault: faultproxy.Fault{Kind: faultproxy.KindStatus, Status: http.StatusOK, Body: []byte(stuckBody),
			Header: http.Header{"Content-Type": []string{"application/json"}}}},
	); err != nil {
		t.Fatal(err)
	}
	scope, err := tenancy.ScopeOf(ctx, conn, v1alpha1.OpenStackSpec{}, "test credentials")
	if err != nil {
		t.Fatal(err)
	}

	e := &Engine{Clock: clock.RealClock{}, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, Poll: time.Second, Workers: 4}
	in := Input{Target: Target{Key: cluster, ClusterName: cluster, SubnetID: rc.subnet}, Workload: wl, Cloud: scope.Cloud, Policy: allow{},
		Settings: Settings{GiveUpAfter: 30 * time.Second, UnreachableGracePeriod: time.Minute, CloudWaitTimeout: 3 * time.Second, Budget: DefaultBudget}}
	st := &v1alpha1.DeorbitStatus{}
	var res Result
	for i := 0; i < 500; i++ {
		res = e.Step(ctx, in, st)
		if res.Release {
			break
		}
		if i == 5 {
			// A restarted operator: a fresh engine resumes from the status alone.
			e = &Engine{Clock: clock.RealClock{}, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, Poll: time.Second, Workers: 4}
			st = st.DeepCopy()
		}
		if !backoff.Sleep(ctx, clock.RealClock{}, time.Until(res.Next)) {
			t.Fatal("cancelled")
		}
	}
	if !res.Release || st.Phase != v1alpha1.DeorbitPhaseGaveUp {
		t.Fatalf("phase %s release %v; last error %q; resources %+v", st.Phase, res.Release, st.LastError, st.Resources)
	}
	if len(st.Debris) != 1 || st.Debris[0].Type != v1alpha1.DeorbitLoadBalancer || st.Debris[0].ID != lbStuck || st.Debris[0].Status != "PENDING_DELETE" {
		t.Fatalf("debris %+v, want exactly load balancer %s in PENDING_DELETE", st.Debris, lbStuck)
	}
	for _, gone := range [][2]string{{v1alpha1.DeorbitVolume, vBound}, {v1alpha1.DeorbitVolume, vOrphan}, {v1alpha1.DeorbitLoadBalancer, lbWeb}} {
		if rc.exists(t, gone[0], gone[1]) {
			t.Errorf("%s %s is still there", gone[0], gone[1])
		}
	}
	for _, kept := range [][2]string{{v1alpha1.DeorbitVolume, vOther}, {v1alpha1.DeorbitVolume, vPlain}, {v1alpha1.DeorbitLoadBalancer, lbOther}, {v1alpha1.DeorbitLoadBalancer, lbElsewhere}} {
		if !rc.exists(t, kept[0], kept[1]) {
			t.Errorf("%s %s, not the cluster's, was deleted", kept[0], kept[1])
		}
	}
	if n := cinder.Count("orphan-500"); n != 2 {
		t.Errorf("%d failed deletes of the orphan, want 2", n)
	}
	if n := cinder.Matched("orphan-500") - cinder.Count("orphan-500"); n != 1 {
		t.Errorf("the orphan was deleted %d times after its failures, want once", n)
	}
	if n := octavia.Count("stuck-delete"); n != 1 {
		t.Errorf("the stuck load balancer was deleted %d times, want once", n)
	}
	for _, obj := range []client.Object{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}}} {
		err := wl.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if err == nil && obj.GetDeletionTimestamp() == nil {
			t.Errorf("%s is still there and not being deleted", client.ObjectKeyFromObject(obj))
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

func resourceGi() resource.Quantity { return resource.MustParse("1Gi") }

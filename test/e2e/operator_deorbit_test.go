package e2e

// Deorbit end to end: a VitalsCluster over the workload cluster (testenv.Workload: its own kube-apiserver with
// kube-controller-manager, the OpenStack cloud controller manager, Cinder CSI, csi-provisioner, csi-snapshotter
// and snapshot-controller, acting in a project of their own on the real Cinder and Octavia) is deleted; the test
// asserts on the cloud, with the project's own credentials, that nothing of the cluster remains and that the
// finalizer goes. The operator reaches Cinder and Octavia, and the workload cluster, through
// internal/test/faultproxy: Cinder's deletes fail, a load balancer stays in PENDING_DELETE, the workload cluster
// goes away mid-run, the operator (run as a process) is killed mid-run; every DELETE the operator sends is counted there.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/internal/test/contract"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
)

// deorbitTimeout bounds a whole deorbit (the engine polls the cloud every 30 s at most; the machine may be
// loaded).
const deorbitTimeout = 6 * time.Minute

// deorbitPodCIDR is the VitalsCluster's pod CIDR; the fixture adds a route of it on the tenant's router.
const deorbitPodCIDR = "198.19.0.0/16"

type deorbitFixture struct {
	t       *testing.T
	w       *wlCluster
	c       client.WithWatch
	ns      string // of the VitalsCluster, in the shared kube-apiserver
	wns     string // of the objects, in the workload cluster
	cloud   *faultproxy.Cloud
	cinder  *faultproxy.Proxy
	octavia *faultproxy.Proxy
	kube    *faultproxy.Proxy // in front of the workload cluster's kube-apiserver
	opts    operator.Options
	// kubeconfig of the operator's own (private) kube-apiserver, for an operator run as a process.
	kubeconfig string

	claims   []string // PVC names
	services []string // Service names
	volumes  []string // Cinder volume IDs of the claims
	lbs      []string // Octavia load balancer IDs of the Services
	// Orphans: the cluster's by their tags, but no claim or Service shows them any more; only the
	// cloud-side sweep finds them, and the operator deletes them itself (through the proxies).
	orphanVolumes []string
	orphanLBs     []string
	// What load balancers and Services leave in Neutron (networkOrphans): a VIP port that Octavia's no-op
	// driver leaves when its load balancer goes, and a floating IP of the cloud controller manager.
	orphanPorts []string
	orphanFIPs  []string
	snaps       []string // Cinder snapshot IDs of the VolumeSnapshots
	route       openstack.Route

	mu      sync.Mutex
	seen    []v1alpha1.VitalsCluster // every version of the VitalsCluster the watch saw
	deleted bool                     // the watch saw it deleted
}

// newDeorbitFixture builds a workload cluster with claims PVCs (the first one with a VolumeSnapshot when
// snapshot is set), services LoadBalancer Services and a pod route, waits until the cloud holds all of it, and
// prepares the VitalsCluster's Secrets and the proxies. The cluster starts empty: what an earlier test left
// is swept first.
func newDeorbitFixture(t *testing.T, claims, services int, snapshot bool) *deorbitFixture {
	t.Helper()
	w := wlOpen(t)
	// The operator's own cluster is private: the shared one's VitalsCluster CRD is installed by every test
	// package from its own checkout, and an older one would prune the deorbit status this test reads.
	kube := testenv.PrivateKube(t)
	cfg := kube.Config()
	cfg.QPS, cfg.Burst = 100, 200
	opInstallCRD(t, cfg)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	f := &deorbitFixture{t: t, w: w, c: c, ns: opNamespace(t, c), kubeconfig: kube.KubeconfigPath()}
	f.emptyCluster()
	w.Sweep()

	// The operator's way to the cloud and to the workload cluster: proxies whose rules the test sets.
	f.cloud, err = faultproxy.NewCloud(w.env.Tenant.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.cloud.Close() })
	f.cinder = f.serviceProxy(openstack.ServiceBlockStorage)
	f.octavia = f.serviceProxy(openstack.ServiceLoadBalancer)
	kp, kcfg, err := faultproxy.NewKube(w.env.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kp.Close() })
	f.kube = kp
	kc := clientcmdapi.NewConfig()
	kc.Clusters["workload"] = &clientcmdapi.Cluster{Server: kcfg.Host}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: kcfg.BearerToken}
	kc.Contexts["workload"] = &clientcmdapi.Context{Cluster: "workload", AuthInfo: "admin"}
	kc.CurrentContext = "workload"
	kcb, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	ten := w.env.Tenant
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "creds"}, StringData: map[string]string{
			"clouds.yaml": opCloudsYAML(f.cloud.AuthURL(), ten.Username, ten.Password, ten.ProjectName)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "workload"}, Data: map[string][]byte{"kubeconfig": kcb}},
	} {
		if err := c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	f.opts = operator.Options{RestConfig: cfg, Namespace: f.ns, CheckInterval: time.Second, CheckTimeout: 5 * time.Second,
		TrustedAuthURLs: []string{f.cloud.AuthURL()}, AllowInsecureWorkload: true}

	// What the cluster holds: claims (one with a snapshot), Services, a pod route.
	f.wns = w.Namespace("deorbit")
	for i := 0; i < claims; i++ {
		f.claims = append(f.claims, fmt.Sprintf("data-%d", i))
		w.PVC(f.wns, f.claims[i])
	}
	for i := 0; i < services; i++ {
		f.services = append(f.services, fmt.Sprintf("web-%d", i))
		w.LBService(f.wns, f.services[i])
	}
	for _, n := range f.claims {
		f.volumes = append(f.volumes, w.Volume(f.wns, n).ID)
	}
	if snapshot && claims > 0 {
		w.Snapshot(f.wns, "snap-0", f.claims[0])
		f.snaps = append(f.snaps, w.CinderSnapshot(f.wns, "snap-0"))
	}
	for _, n := range f.services {
		f.lbs = append(f.lbs, w.LoadBalancer(f.wns, n).ID)
	}
	f.route = openstack.Route{Destination: "198.19.7.0/24", NextHop: w.env.NodeIP}
	if _, err := w.cloud.AddRoutes(context.Background(), w.env.RouterID, []openstack.Route{f.route}); err != nil {
		t.Fatalf("add the cluster's pod route: %v", err)
	}
	t.Cleanup(func() { _, _ = w.cloud.RemoveRoutes(context.Background(), w.env.RouterID, []openstack.Route{f.route}) })
	return f
}

// serviceProxy returns the proxy the operator reaches service s through.
func (f *deorbitFixture) serviceProxy(s openstack.Service) *faultproxy.Proxy {
	f.t.Helper()
	sc, err := f.w.cloud.Client(s)
	if err != nil {
		f.t.Fatal(err)
	}
	u, err := url.Parse(sc.Endpoint)
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := f.cloud.Service(u.Scheme + "://" + u.Host)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// emptyCluster waits until no earlier test's claims, Services or cloud resources are left (their namespaces
// are deleted at the end of those tests; kube-controller-manager and the cloud controllers then delete them).
func (f *deorbitFixture) emptyCluster() {
	f.t.Helper()
	ctx := context.Background()
	opEventually(f.t, wlCloudTimeout, "an empty workload cluster", func() (bool, string) {
		pvcs, err := f.w.cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		svcs, err := f.w.cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		lb := 0
		for _, s := range svcs.Items {
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				lb++
			}
		}
		v, l := len(f.w.CloudVolumes()), len(f.w.CloudLBs())
		return len(pvcs.Items)+lb+v+l == 0, fmt.Sprintf("%d PVCs, %d LoadBalancer Services, %d volumes, %d load balancers", len(pvcs.Items), lb, v, l)
	})
}

// orphans creates volumes with Cinder CSI's metadata of the cluster and load balancers named as the cloud
// controller manager names the cluster's, directly in the tenant's project, and waits until they are ready.
func (f *deorbitFixture) orphans(nVolumes, nLBs int) {
	f.t.Helper()
	ctx := context.Background()
	bc, err := f.w.cloud.Client(openstack.ServiceBlockStorage)
	if err != nil {
		f.t.Fatal(err)
	}
	lc, err := f.w.cloud.Client(openstack.ServiceLoadBalancer)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i < nVolumes; i++ {
		v, err := volumes.Create(ctx, bc, volumes.CreateOpts{Size: 1, Name: fmt.Sprintf("orphan-%d", i),
			Metadata: map[string]string{wlVolumeClusterKey: f.w.env.ClusterName}}, nil).Extract()
		if err != nil {
			f.t.Fatalf("create orphan volume: %v", err)
		}
		f.orphanVolumes = append(f.orphanVolumes, v.ID)
	}
	for i := 0; i < nLBs; i++ {
		lb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: fmt.Sprintf("%sorphans_lb-%d", f.w.LBNamePrefix(), i),
			VipSubnetID: f.w.env.SubnetID}).Extract()
		if err != nil {
			f.t.Fatalf("create orphan load balancer: %v", err)
		}
		f.orphanLBs = append(f.orphanLBs, lb.ID)
	}
	opEventually(f.t, wlCloudTimeout, "orphans ready", func() (bool, string) {
		var wait []string
		for _, id := range f.orphanVolumes {
			if v, err := f.w.cloud.GetVolume(ctx, id); err != nil || v.Status != "available" {
				wait = append(wait, fmt.Sprintf("volume %s %v %v", id, v, err))
			}
		}
		for _, id := range f.orphanLBs {
			if l, err := f.w.cloud.GetLoadBalancer(ctx, id); err != nil || l.ProvisioningStatus != "ACTIVE" {
				wait = append(wait, fmt.Sprintf("load balancer %s %v %v", id, l, err))
			}
		}
		return len(wait) == 0, strings.Join(wait, ", ")
	})
}

// networkOrphans adds an orphan load balancer on a VIP port made as Octavia makes it (owner Octavia, named
// after the load balancer), which Octavia's no-op driver leaves behind when the load balancer goes, and an
// unassociated floating IP with the cloud controller manager's description of a Service of the cluster (of
// an external network the admin makes), as a cloud controller manager that failed to delete it leaves it.
func (f *deorbitFixture) networkOrphans() {
	f.t.Helper()
	ctx := context.Background()
	admin := testenv.OpenStack(f.t)
	ext := contract.ExternalNetwork(f.t, openstack.Config{Auth: openstack.Auth{Source: "test", Options: admin.AuthOptions()}}, "192.0.2.0/24")
	nc, err := f.w.cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		f.t.Fatal(err)
	}
	lc, err := f.w.cloud.Client(openstack.ServiceLoadBalancer)
	if err != nil {
		f.t.Fatal(err)
	}
	sn, err := f.w.cloud.GetSubnet(ctx, f.w.env.SubnetID)
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := ports.Create(ctx, nc, ports.CreateOpts{NetworkID: sn.NetworkID, Name: "vip", DeviceOwner: ccm.OctaviaOwner,
		FixedIPs: []ports.IP{{SubnetID: sn.ID}}}).Extract()
	if err != nil {
		f.t.Fatalf("create VIP port: %v", err)
	}
	f.t.Cleanup(func() { _ = ports.Delete(context.Background(), nc, p.ID).ExtractErr() })
	lb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: f.w.LBNamePrefix() + "orphans_vip",
		VipPortID: p.ID, VipSubnetID: sn.ID, VipAddress: p.FixedIPs[0].IPAddress}).Extract()
	if err != nil {
		f.t.Fatalf("create orphan load balancer on a VIP port: %v", err)
	}
	name, device := ccm.VIPPortName(lb.ID), "lb-"+lb.ID
	if _, err := ports.Update(ctx, nc, p.ID, ports.UpdateOpts{Name: &name, DeviceID: &device}).Extract(); err != nil {
		f.t.Fatal(err)
	}
	f.orphanLBs = append(f.orphanLBs, lb.ID)
	f.orphanPorts = append(f.orphanPorts, p.ID)
	fip, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: ext,
		Description: ccm.FloatingIPDescription(f.w.env.ClusterName, "default", "gone")}).Extract()
	if err != nil {
		f.t.Fatalf("create floating IP: %v", err)
	}
	f.t.Cleanup(func() { _ = floatingips.Delete(context.Background(), nc, fip.ID).ExtractErr() })
	f.orphanFIPs = append(f.orphanFIPs, fip.ID)
}

// countDeletes adds a rule per orphan volume and load balancer, and per claim and Service in the workload
// cluster, that lets its DELETE pass and counts it.
func (f *deorbitFixture) countDeletes() { f.countDeletesHolding("") }

// countDeletesHolding is countDeletes, but the first DELETE of the orphan held is passed to the cloud and
// its answer held back (faultproxy.TimeoutAfterUpstream) until the client goes away; the next ones pass.
func (f *deorbitFixture) countDeletesHolding(held string) {
	f.t.Helper()
	fault := func(id string) faultproxy.Fault {
		if id == held {
			return faultproxy.TimeoutAfterUpstream(0)
		}
		return faultproxy.Pass()
	}
	for _, id := range f.orphanVolumes {
		if err := f.cinder.Add(faultproxy.Rule{Name: "delete-" + id, Method: "DELETE", Path: "/v3/*/volumes/" + id, Fault: fault(id), Times: 1}); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, id := range f.orphanLBs {
		if err := f.octavia.Add(faultproxy.Rule{Name: "delete-" + id, Method: "DELETE", Path: "/*/lbaas/loadbalancers/" + id, Fault: fault(id), Times: 1}); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, n := range f.claims {
		if err := f.kube.Add(faultproxy.Rule{Name: "delete-pvc-" + n, Method: "DELETE", Path: "/api/v1/namespaces/" + f.wns + "/persistentvolumeclaims/" + n, Fault: faultproxy.Pass()}); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, n := range f.services {
		if err := f.kube.Add(faultproxy.Rule{Name: "delete-svc-" + n, Method: "DELETE", Path: "/api/v1/namespaces/" + f.wns + "/services/" + n, Fault: faultproxy.Pass()}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// deletes returns how many DELETE requests of each orphan, claim and Service the operator sent
// (countDeletes).
func (f *deorbitFixture) deletes() map[string]int {
	out := map[string]int{}
	for _, id := range f.orphanVolumes {
		out["volume "+id] = f.cinder.Matched("delete-" + id)
	}
	for _, id := range f.orphanLBs {
		out["load balancer "+id] = f.octavia.Matched("delete-" + id)
	}
	for _, n := range f.claims {
		out["PVC "+n] = f.kube.Matched("delete-pvc-" + n)
	}
	for _, n := range f.services {
		out["Service "+n] = f.kube.Matched("delete-svc-" + n)
	}
	return out
}

// create creates the VitalsCluster over the workload cluster, mutated, with the deletion policy Deorbit and the
// teardown confirmed (the annotation naming its UID: the interlock of a cluster without a Cluster API owner whose
// servers stand), and waits until the access controller proved its cloud and holds the deorbit finalizer.
func (f *deorbitFixture) create(mutate func(*v1alpha1.VitalsCluster)) client.ObjectKey {
	f.t.Helper()
	return f.createAs(mutate, true)
}

// createAs is create, with the teardown confirmed or not; a mutation may set the policy Orphan (then no
// finalizer is waited for).
func (f *deorbitFixture) createAs(mutate func(*v1alpha1.VitalsCluster), confirm bool) client.ObjectKey {
	f.t.Helper()
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "doomed"}, Spec: v1alpha1.ClusterSpec{
		KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "workload"},
		OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
			RouterID: f.w.env.RouterID, SubnetID: f.w.env.SubnetID, ClusterName: f.w.env.ClusterName},
		PodCIDRs:       []v1alpha1.CIDR{deorbitPodCIDR},
		DeletionPolicy: v1alpha1.DeletionPolicyDeorbit,
	}}
	if mutate != nil {
		mutate(vc)
	}
	if err := f.c.Create(context.Background(), vc); err != nil {
		f.t.Fatalf("create cluster: %v", err)
	}
	key := client.ObjectKeyFromObject(vc)
	if confirm {
		f.confirm(key)
	}
	f.watch(key)
	wantFin := vc.Spec.Deletion() == v1alpha1.DeletionPolicyDeorbit
	opEventually(f.t, 2*time.Minute, "cloud verified and the deorbit finalizer held (deletion policy Deorbit only)", func() (bool, string) {
		var got v1alpha1.VitalsCluster
		if err := f.c.Get(context.Background(), key, &got); err != nil {
			return false, err.Error()
		}
		cd := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCloudVerified)
		fin := false
		for _, x := range got.Finalizers {
			fin = fin || x == v1alpha1.FinalizerDeorbit
		}
		if cd == nil {
			return false, fmt.Sprintf("finalizer %t, no CloudVerified", fin)
		}
		return fin == wantFin && cd.Status == metav1.ConditionTrue, fmt.Sprintf("finalizer %t, CloudVerified %s/%s: %s", fin, cd.Status, cd.Reason, cd.Message)
	})
	return key
}

// confirm annotates the VitalsCluster with the confirmation of its teardown, naming its UID.
func (f *deorbitFixture) confirm(key client.ObjectKey) {
	f.t.Helper()
	var vc v1alpha1.VitalsCluster
	if err := f.c.Get(context.Background(), key, &vc); err != nil {
		f.t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationConfirmDeorbit, vc.UID)
	if err := f.c.Patch(context.Background(), &vc, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		f.t.Fatalf("confirm the teardown of %s: %v", key, err)
	}
}

// watch records every version of the VitalsCluster until the test ends: its last status is written in the
// same reconcile that releases the finalizer, so a Get after it is too late.
func (f *deorbitFixture) watch(key client.ObjectKey) {
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	var list v1alpha1.VitalsClusterList
	wi, err := f.c.Watch(ctx, &list, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name})
	if err != nil {
		f.t.Fatalf("watch cluster %s: %v", key, err)
	}
	f.t.Cleanup(wi.Stop)
	go func() {
		for ev := range wi.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
				continue
			}
			if vc, ok := ev.Object.(*v1alpha1.VitalsCluster); ok {
				f.mu.Lock()
				f.seen = append(f.seen, *vc.DeepCopy())
				f.deleted = f.deleted || ev.Type == watch.Deleted
				f.mu.Unlock()
			}
		}
	}()
}

// last is the newest version of the VitalsCluster the watch saw.
func (f *deorbitFixture) last() v1alpha1.VitalsCluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		return v1alpha1.VitalsCluster{}
	}
	return f.seen[len(f.seen)-1]
}

// phases lists the deorbit phases the watch saw, in order, without repeats.
func (f *deorbitFixture) phases() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, vc := range f.seen {
		if vc.Status.Deorbit == nil || vc.Status.Deorbit.Phase == "" {
			continue
		}
		if p := vc.Status.Deorbit.Phase; len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// deleteAndWait deletes the VitalsCluster and waits until it is gone (the finalizer released).
func (f *deorbitFixture) deleteAndWait(key client.ObjectKey) {
	f.t.Helper()
	f.delete(key)
	f.waitGone(key)
}

func (f *deorbitFixture) delete(key client.ObjectKey) {
	f.t.Helper()
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := f.c.Delete(context.Background(), vc); err != nil {
		f.t.Fatalf("delete cluster: %v", err)
	}
}

func (f *deorbitFixture) waitGone(key client.ObjectKey) {
	f.t.Helper()
	opEventually(f.t, deorbitTimeout, "the VitalsCluster gone (finalizer released)", func() (bool, string) {
		var got v1alpha1.VitalsCluster
		err := f.c.Get(context.Background(), key, &got)
		if err == nil {
			d := got.Status.Deorbit
			if d == nil {
				return false, "no deorbit status"
			}
			return false, fmt.Sprintf("phase %s, %d/%d done, last error %q", d.Phase, d.Counts.Done, d.Counts.Total, d.LastError)
		}
		return client.IgnoreNotFound(err) == nil, err.Error()
	})
	opEventually(f.t, time.Minute, "the watch saw the VitalsCluster deleted", func() (bool, string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.deleted, fmt.Sprintf("%d versions seen", len(f.seen))
	})
}

// mustBeEmpty asserts on the cloud, with the project's credentials, and in the workload cluster that nothing
// of the cluster remains.
func (f *deorbitFixture) mustBeEmpty() {
	f.t.Helper()
	ctx := context.Background()
	for id := range f.w.CloudVolumes() {
		f.t.Errorf("volume %s of the cluster still in Cinder", id)
	}
	for id, st := range f.w.CloudSnapshots() {
		f.t.Errorf("snapshot %s (%s) still in Cinder", id, st)
	}
	for id, lb := range f.w.CloudLBs() {
		f.t.Errorf("load balancer %s (%s, %s) of the cluster still in Octavia", id, lb.Name, lb.ProvisioningStatus)
	}
	for _, id := range append(append([]string(nil), f.volumes...), f.orphanVolumes...) {
		if _, err := f.w.cloud.GetVolume(ctx, id); !openstack.IsNotFound(err) {
			f.t.Errorf("volume %s: Cinder answers %v, want 404", id, err)
		}
	}
	for _, id := range append(append([]string(nil), f.lbs...), f.orphanLBs...) {
		if _, err := f.w.cloud.GetLoadBalancer(ctx, id); !openstack.IsNotFound(err) {
			f.t.Errorf("load balancer %s: Octavia answers %v, want 404", id, err)
		}
	}
	for _, id := range f.orphanPorts {
		if _, err := f.w.cloud.GetPort(ctx, id); !openstack.IsNotFound(err) {
			f.t.Errorf("VIP port %s: Neutron answers %v, want 404", id, err)
		}
	}
	for _, id := range f.orphanFIPs {
		if _, err := f.w.cloud.GetFloatingIP(ctx, id); !openstack.IsNotFound(err) {
			f.t.Errorf("floating IP %s: Neutron answers %v, want 404", id, err)
		}
	}
	// Nothing of the cluster's in Neutron: no floating IP with its description, no VIP port of its load
	// balancers.
	fips, err := f.w.cloud.ListFloatingIPs(ctx, openstack.ListOpts{ProjectID: f.w.env.ProjectID})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, x := range fips {
		if ccm.OwnsFloatingIPDescription(f.w.env.ClusterName, x.Description) {
			f.t.Errorf("floating IP %s (%s) of the cluster still in Neutron", x.ID, x.Description)
		}
	}
	vips, err := f.w.cloud.ListPorts(ctx, openstack.ListOpts{ProjectID: f.w.env.ProjectID, DeviceOwner: ccm.OctaviaOwner})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, x := range vips {
		if lb, ok := ccm.VIPPortOf(&x); ok && (slices.Contains(f.lbs, lb) || slices.Contains(f.orphanLBs, lb)) {
			f.t.Errorf("VIP port %s of load balancer %s still in Neutron", x.ID, lb)
		}
	}
	r, err := f.w.cloud.GetRouter(ctx, f.w.env.RouterID)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, x := range r.Routes {
		if x == f.route {
			f.t.Errorf("route %s via %s still on the router", x.Destination, x.NextHop)
		}
	}
	// In the workload cluster every claim and Service was deleted; one may still be going, held by its
	// controller's finalizer (a Service by the cloud controller manager's, until it has seen its load balancer
	// gone; on a busy machine that can come a few seconds after deorbit is done).
	opEventually(f.t, wlCloudTimeout, "the cluster's claims and Services gone from the workload cluster", func() (bool, string) {
		pvcs, err := f.w.cs.CoreV1().PersistentVolumeClaims(f.wns).List(ctx, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		svcs, err := f.w.cs.CoreV1().Services(f.wns).List(ctx, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		var left []string
		for _, o := range append(objectsOf(pvcs.Items), objectsOf(svcs.Items)...) {
			if o.GetDeletionTimestamp() == nil {
				f.t.Fatalf("%T %s/%s still in the workload cluster, not being deleted", o, o.GetNamespace(), o.GetName())
			}
			left = append(left, fmt.Sprintf("%T %s/%s (being deleted, finalizers %v)", o, o.GetNamespace(), o.GetName(), o.GetFinalizers()))
		}
		return len(left) == 0, strings.Join(left, "; ")
	})
}

// objectsOf is the items of a typed list as metav1.Objects.
func objectsOf[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// operatorStart starts an operator with the fixture's options under identity.
func (f *deorbitFixture) operatorStart(identity string) *opRun {
	o := f.opts
	o.Identity = identity
	return opStart(f.t, o)
}

// deorbitSummary is a short line of a status, for logs.
func deorbitSummary(d *v1alpha1.DeorbitStatus) string {
	if d == nil {
		return "(none)"
	}
	b, _ := json.Marshal(d.Counts)
	return fmt.Sprintf("phase %s counts %s", d.Phase, b)
}

func TestOperatorDeorbit(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 3, 2, true)
	f.networkOrphans()
	f.orphans(1, 1)
	f.countDeletes()
	f.operatorStart("deorbit")
	key := f.create(nil)
	f.deleteAndWait(key)
	f.mustBeEmpty()
	last := f.last()
	t.Logf("phases %v; last status %s", f.phases(), deorbitSummary(last.Status.Deorbit))
	if d := last.Status.Deorbit; d == nil || d.Phase != v1alpha1.DeorbitPhaseDone || len(d.Debris) != 0 {
		t.Errorf("last status %+v, want phase Done without debris", d)
	}
	for what, n := range f.deletes() {
		if n > 1 {
			t.Errorf("%s: %d DELETE requests, want at most one", what, n)
		}
	}
}

// deorbitHeld waits until the deleted VitalsCluster key is held by its interlock (CleanedUp False/NotConfirmed),
// and returns it with the condition's message.
func deorbitHeld(t *testing.T, c client.Client, key client.ObjectKey, timeout time.Duration) (v1alpha1.VitalsCluster, string) {
	t.Helper()
	var vc v1alpha1.VitalsCluster
	var msg string
	opEventually(t, timeout, "the deleted VitalsCluster held: CleanedUp False/NotConfirmed", func() (bool, string) {
		if err := c.Get(context.Background(), key, &vc); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionCleanedUp)
		if cond == nil {
			return false, "no CleanedUp condition"
		}
		msg = cond.Message
		return cond.Status == metav1.ConditionFalse && cond.Reason == deorbit.ReasonNotConfirmed, cond.Reason + ": " + cond.Message
	})
	return vc, msg
}

// TestOperatorDeorbitInterlock: deleting VitalsClusters of a live cluster. A hand-made one (deletion policy Orphan,
// the default) goes at once and nothing is deleted, in the workload cluster or in the cloud. One with the policy
// Deorbit and no interlock (no Cluster API owner, no confirmation, its servers not counted) is held: its
// condition says why and how to go on, and nothing is deleted; confirmed with its UID, it tears the cluster down.
func TestOperatorDeorbitInterlock(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 1, 1, false)
	for _, p := range []*faultproxy.Proxy{f.cinder, f.octavia, f.kube} {
		if err := p.Add(faultproxy.Rule{Name: "any-delete", Method: "DELETE", Path: "/**", Fault: faultproxy.Pass()}); err != nil {
			t.Fatal(err)
		}
	}
	anyDeletes := func() int {
		return f.cinder.Matched("any-delete") + f.octavia.Matched("any-delete") + f.kube.Matched("any-delete")
	}
	f.operatorStart("interlock")
	intact := func(when string) {
		t.Helper()
		if n := anyDeletes(); n != 0 {
			t.Errorf("%s: the operator sent %d DELETE requests to Cinder, Octavia or the workload cluster, want none", when, n)
		}
		ctx := context.Background()
		for _, id := range f.volumes {
			if _, err := f.w.cloud.GetVolume(ctx, id); err != nil {
				t.Errorf("%s: volume %s: %v", when, id, err)
			}
		}
		for _, id := range f.lbs {
			if lb, err := f.w.cloud.GetLoadBalancer(ctx, id); err != nil || lb.ProvisioningStatus == "PENDING_DELETE" {
				t.Errorf("%s: load balancer %s: %v", when, id, err)
			}
		}
		for _, n := range f.claims {
			if _, err := f.w.cs.CoreV1().PersistentVolumeClaims(f.wns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: claim %s: %v", when, n, err)
			}
		}
		for _, n := range f.services {
			if _, err := f.w.cs.CoreV1().Services(f.wns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: Service %s: %v", when, n, err)
			}
		}
		r, err := f.w.cloud.GetRouter(ctx, f.w.env.RouterID)
		if err != nil || !slices.Contains(r.Routes, f.route) {
			t.Errorf("%s: the pod route is no longer on the router (%v)", when, err)
		}
	}

	key := f.createAs(func(vc *v1alpha1.VitalsCluster) { vc.Spec.DeletionPolicy = "" }, false)
	var vc v1alpha1.VitalsCluster
	if err := f.c.Get(context.Background(), key, &vc); err != nil || vc.Spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan {
		t.Fatalf("a VitalsCluster made without a deletion policy has %q (%v), want Orphan", vc.Spec.DeletionPolicy, err)
	}
	start := time.Now()
	f.deleteAndWait(key)
	t.Logf("Orphan: the VitalsCluster gone %.1f s after its deletion", time.Since(start).Seconds())
	intact("after deleting the Orphan VitalsCluster")

	key = f.createAs(nil, false)
	f.delete(key)
	vc, msg := deorbitHeld(t, f.c, key, time.Minute)
	t.Logf("CleanedUp: %s", msg)
	for _, want := range []string{"nothing was deleted", "no Cluster API Cluster owns it",
		"annotate vitalscluster doomed " + v1alpha1.AnnotationConfirmDeorbit + "=" + string(vc.UID), `"deletionPolicy":"Orphan"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the condition does not say %q", want)
		}
	}
	time.Sleep(5 * time.Second) // a few more of the operator's looks
	intact("while the Deorbit VitalsCluster is held")

	f.confirm(key)
	f.waitGone(key)
	f.mustBeEmpty()
	if d := f.last().Status.Deorbit; d == nil || d.Phase != v1alpha1.DeorbitPhaseDone || !strings.Contains(d.Interlock, "confirmed by annotation") {
		t.Errorf("last status %+v, want phase Done, confirmed by the annotation", d)
	}
}

// Cinder answers 500 to the first two DELETEs of each orphan volume: deorbit retries with backoff, the third
// goes through, and no fourth is sent.
func TestOperatorDeorbitCinderDeleteFails(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 1, 0, false)
	f.orphans(2, 0)
	for _, id := range f.orphanVolumes {
		if err := f.cinder.Add(faultproxy.Rule{Name: "delete-500-" + id, Method: "DELETE", Path: "/v3/*/volumes/" + id,
			Fault: faultproxy.Status(500, faultproxy.StyleNova, "injected"), Times: 2}); err != nil {
			t.Fatal(err)
		}
	}
	f.operatorStart("deorbit")
	key := f.create(nil)
	f.deleteAndWait(key)
	f.mustBeEmpty()
	for _, id := range f.orphanVolumes {
		if n, m := f.cinder.Count("delete-500-"+id), f.cinder.Matched("delete-500-"+id); n != 2 || m != 3 {
			t.Errorf("volume %s: %d DELETEs answered 500 and %d sent, want 2 and 3", id, n, m)
		}
	}
	failed := false
	for _, vc := range f.versions() {
		for _, r := range statusResources(vc) {
			failed = failed || (r.Type == v1alpha1.DeorbitVolume && strings.Contains(r.LastError, "500"))
		}
	}
	if !failed {
		t.Errorf("no status showed a volume's failed delete")
	}
	if d := f.last().Status.Deorbit; d == nil || d.Phase != v1alpha1.DeorbitPhaseDone {
		t.Errorf("last status %+v, want phase Done", d)
	}
}

// versions returns every version of the VitalsCluster the watch saw.
func (f *deorbitFixture) versions() []v1alpha1.VitalsCluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]v1alpha1.VitalsCluster(nil), f.seen...)
}

func statusResources(vc v1alpha1.VitalsCluster) []v1alpha1.DeorbitResource {
	if vc.Status.Deorbit == nil {
		return nil
	}
	return vc.Status.Deorbit.Resources
}

// Octavia keeps an orphan load balancer in PENDING_DELETE: its DELETE is refused with Octavia's own 409, its
// reads say PENDING_DELETE. Deorbit gives up after giveUpAfter with an exact debris report: that load
// balancer and nothing else, in status (with its status and last error), counted in an Event and in the debris
// metric.
func TestOperatorDeorbitLoadBalancerStuck(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 1, 1, false)
	f.orphans(0, 1)
	stuck := f.orphanLBs[0]
	lb, err := f.w.cloud.GetLoadBalancer(context.Background(), stuck)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"loadbalancer": map[string]any{"id": lb.ID, "name": lb.Name, "project_id": lb.ProjectID,
		"provisioning_status": "PENDING_DELETE", "operating_status": lb.OperatingStatus, "vip_address": lb.VIPAddress, "tags": lb.Tags}})
	if err != nil {
		t.Fatal(err)
	}
	get := faultproxy.Status(200, faultproxy.StyleOctavia, "")
	get.Body = body
	if err := f.octavia.Add(
		faultproxy.Rule{Name: "stuck-delete", Method: "DELETE", Path: "/*/lbaas/loadbalancers/" + stuck,
			Fault: faultproxy.Status(409, faultproxy.StyleOctavia, "Invalid state PENDING_DELETE of loadbalancer resource "+stuck)},
		faultproxy.Rule{Name: "stuck-get", Method: "GET", Path: "/*/lbaas/loadbalancers/" + stuck, Fault: get},
	); err != nil {
		t.Fatal(err)
	}
	r := f.operatorStart("deorbit")
	key := f.create(func(vc *v1alpha1.VitalsCluster) {
		vc.Spec.Controllers.Deorbit.GiveUpAfter = &metav1.Duration{Duration: time.Minute}
	})
	f.deleteAndWait(key)
	d := f.last().Status.Deorbit
	if d == nil || d.Phase != v1alpha1.DeorbitPhaseGaveUp {
		t.Fatalf("last status %+v, want phase GaveUp", d)
	}
	if len(d.Debris) != 1 || d.Debris[0].Type != v1alpha1.DeorbitLoadBalancer || d.Debris[0].ID != stuck {
		t.Fatalf("debris %+v, want exactly the stuck load balancer %s", d.Debris, stuck)
	}
	t.Logf("debris: %+v", d.Debris[0])
	if st := d.Debris[0].Status; st != "PENDING_DELETE" {
		t.Errorf("debris status %q, want PENDING_DELETE", st)
	}
	if f.octavia.Matched("stuck-get") == 0 {
		t.Errorf("the stuck load balancer was never read")
	}
	// Everything else went.
	ctx := context.Background()
	for _, id := range f.volumes {
		if _, err := f.w.cloud.GetVolume(ctx, id); !openstack.IsNotFound(err) {
			t.Errorf("volume %s: %v, want 404", id, err)
		}
	}
	for _, id := range f.lbs {
		if _, err := f.w.cloud.GetLoadBalancer(ctx, id); !openstack.IsNotFound(err) {
			t.Errorf("load balancer %s: %v, want 404", id, err)
		}
	}
	// The Event counts the debris by type and points at the status, which names each piece.
	opEventually(t, time.Minute, "a DeorbitGaveUp Event counting one load balancer", func() (bool, string) {
		var evs corev1.EventList
		if err := f.c.List(ctx, &evs, client.InNamespace(f.ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "DeorbitGaveUp" {
				if strings.Contains(e.Message, "1 "+v1alpha1.DeorbitLoadBalancer) {
					return true, ""
				}
				seen = append(seen, e.Message)
			}
		}
		return false, fmt.Sprintf("DeorbitGaveUp Events: %q", seen)
	})
	// The cluster's series went with the finalizer; the debris is counted without it, for the alert.
	opEventually(t, time.Minute, "no vitals_deorbit_debris series of the released cluster", func() (bool, string) {
		got := metricValue(t, r, "vitals_deorbit_debris", map[string]string{"vitalscluster": key.String(), "type": v1alpha1.DeorbitLoadBalancer})
		return got == -1, fmt.Sprintf("vitals_deorbit_debris{type=LoadBalancer} = %v", got)
	})
	if got := metricValue(t, r, "vitals_deorbit_debris_left_total", map[string]string{"type": v1alpha1.DeorbitLoadBalancer}); got != 1 {
		t.Errorf("vitals_deorbit_debris_left_total{type=LoadBalancer} = %v, want 1", got)
	}
}

// metricValue reads a gauge or counter of the operator's registry (-1 when absent).
func metricValue(t *testing.T, r *opRun, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// The workload cluster goes away once deorbit began: after the grace period deorbit goes on with the
// cloud-side sweep, which finds the volumes and load balancers by the cluster's tags and deletes them.
func TestOperatorDeorbitWorkloadGone(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 2, 1, false)
	f.operatorStart("deorbit")
	key := f.create(func(vc *v1alpha1.VitalsCluster) {
		vc.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{Duration: 5 * time.Second}
	})
	if err := f.kube.Add(faultproxy.Rule{Name: "gone", Path: "/**", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	f.deleteAndWait(key)
	d := f.last().Status.Deorbit
	if d == nil || d.WorkloadSkipped == "" || d.Phase != v1alpha1.DeorbitPhaseDone {
		t.Errorf("last status %+v, want phase Done with the Kubernetes phases skipped", d)
	} else {
		t.Logf("workload skipped: %s", d.WorkloadSkipped)
	}
	for id := range f.w.CloudVolumes() {
		t.Errorf("volume %s of the cluster still in Cinder", id)
	}
	for id := range f.w.CloudLBs() {
		t.Errorf("load balancer %s of the cluster still in Octavia", id)
	}
	if f.kube.Count("gone") == 0 {
		t.Errorf("the operator never tried the workload cluster after it went away")
	}
}

// opProcess is `vitals operator` running as a process of its own (built from ./cmd/vitals), so that a
// test can kill it as a node or the OOM killer does: no deferred function, no last status write.
type opProcess struct {
	cmd    *exec.Cmd
	logs   *lockedBuffer
	exited chan error
}

// operatorProcess starts `vitals operator` with the fixture's options: the operator's own kube-apiserver,
// the test's namespace, the proxies' Keystone trusted, the workload cluster on loopback over http. It
// has no OpenStack credentials of its own (the VitalsCluster's Secret has them) and no leader election.
func (f *deorbitFixture) operatorProcess() *opProcess {
	f.t.Helper()
	bin := serveBuild(f.t, opRepoRoot())
	args := []string{"operator", "--kubeconfig", f.kubeconfig, "--namespace", f.ns, "--leader-elect=false",
		"--health-bind-address", "127.0.0.1", "--health-port", strconv.Itoa(freePort(f.t)), "--metrics-bind-address", "0",
		"--check-interval", f.opts.CheckInterval.String(), "--check-timeout", f.opts.CheckTimeout.String(),
		"--allow-insecure-workload", "--allow-loopback-workload"}
	for _, u := range f.opts.TrustedAuthURLs {
		args = append(args, "--trusted-auth-url", u)
	}
	p := &opProcess{cmd: exec.Command(bin, args...), logs: &lockedBuffer{}, exited: make(chan error, 1)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OS_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		f.t.Fatalf("start vitals operator: %v", err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	f.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		if f.t.Failed() {
			f.t.Logf("vitals operator output:\n%s", p.logs.String())
		}
	})
	return p
}

// kill sends SIGKILL and waits until the process is gone.
func (p *opProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill the operator: %v", err)
	}
	select {
	case err := <-p.exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the operator ended with %v before the kill; output:\n%s", err, p.logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the operator did not die on SIGKILL")
	}
}

// The operator is killed (SIGKILL) while a DELETE is in flight: with a budget of one delete per step, each
// step's status is written before the next delete; the proxy passes the orphan load balancer's DELETE (the
// sweep's last) to Octavia and holds its answer, so Octavia deletes it and the operator never records that
// it did. A new operator resumes from the status (phase Sweep, the orphan volumes' deletes recorded, the
// load balancer's not): everything goes, the finalizer too, and the cloud and the workload cluster saw
// exactly one DELETE of each orphan, claim and Service.
func TestOperatorDeorbitOperatorKilled(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 2, 1, false)
	f.orphans(2, 1)
	held := f.orphanLBs[0]
	f.countDeletesHolding(held)
	first := f.operatorProcess()
	key := f.create(func(vc *v1alpha1.VitalsCluster) {
		one := int32(1)
		vc.Spec.Controllers.Deorbit.Budget = &one
	})
	f.delete(key)
	ctx := context.Background()
	opEventually(t, deorbitTimeout, "the orphan load balancer's DELETE carried out by Octavia, its answer held, the status in phase Sweep without it", func() (bool, string) {
		d := f.last().Status.Deorbit
		for _, r := range statusResources(f.last()) {
			if r.ID == held && r.Attempts > 0 {
				t.Fatalf("the DELETE of %s was recorded although its answer is held: %s", held, deorbitSummary(d))
			}
		}
		st := "gone"
		l, err := f.w.cloud.GetLoadBalancer(ctx, held)
		switch {
		case err == nil:
			st = l.ProvisioningStatus
		case !openstack.IsNotFound(err):
			st = err.Error()
		}
		acted := st == "gone" || st == "PENDING_DELETE" || st == "DELETED"
		return f.octavia.Count("delete-"+held) == 1 && acted && d != nil && d.Phase == v1alpha1.DeorbitPhaseSweep,
			fmt.Sprintf("%d DELETEs held, Octavia says %s; status %s", f.octavia.Count("delete-"+held), st, deorbitSummary(d))
	})
	first.kill(t)
	t.Logf("killed at %s (phases seen %v); DELETEs so far %v", deorbitSummary(f.last().Status.Deorbit), f.phases(), f.deletes())
	var still v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, key, &still); err != nil {
		t.Fatalf("the cluster after the first operator died: %v (deorbit ended before the kill: nothing to resume)", err)
	}
	f.operatorStart("deorbit-2")
	f.waitGone(key)
	f.mustBeEmpty()
	for what, n := range f.deletes() {
		if n != 1 {
			t.Errorf("%s: %d DELETE requests, want exactly one", what, n)
		}
	}
	if d := f.last().Status.Deorbit; d == nil || d.Phase != v1alpha1.DeorbitPhaseDone || len(d.Debris) != 0 {
		t.Errorf("last status %+v, want phase Done without debris", d)
	}
}

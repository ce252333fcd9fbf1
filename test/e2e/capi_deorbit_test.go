package e2e

// Deletion inside Cluster API, end to end: the operator (operator.New with --capi-enrol, acting as the chart's
// ServiceAccount with the chart's RBAC) enrols a Cluster that CAPO reconciled on the real Keystone, Neutron and
// Octavia; what a workload cluster would have made in CAPO's project (a Cinder volume as Cinder CSI names and tags
// it, an Octavia load balancer as the cloud controller manager names it, on a VIP port on the
// cluster's subnet) is put there, beside foreign resources that must survive; `kubectl delete cluster` must end
// with CAPO's teardown done and the project holding nothing of the cluster.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
)

// capiWorkloadDebris is what the test puts into CAPO's project as a workload cluster's controllers would have:
// a volume (Cinder CSI), a load balancer on a VIP port (the cloud controller manager, Octavia), and the foreign
// ones: a volume and a load balancer of cluster <name>0, whose names start like the cluster's. No snapshot: with
// the workload API unreachable, a volume's snapshots may be a VolumeSnapshotContent's with deletionPolicy
// Retain, and deorbit leaves them, and their volume, in the debris (the engine's tests).
type capiWorkloadDebris struct {
	volume, lb, vipPort      string
	foreignVolume, foreignLB string
}

// workloadDebris creates the debris of cluster name on subnet (of network) in the tenant's project, waits until
// it is available and active, and deletes what is left of it when the test ends.
func (m *capiMgmt) workloadDebris(name, network, subnet string) capiWorkloadDebris {
	m.t.Helper()
	ctx := context.Background()
	svc := func(s openstack.Service) *gophercloud.ServiceClient {
		c, err := m.cloud.Client(s)
		if err != nil {
			m.t.Fatal(err)
		}
		return c
	}
	bc, lc, nc := svc(openstack.ServiceBlockStorage), svc(openstack.ServiceLoadBalancer), svc(openstack.ServiceNetworking)
	var d capiWorkloadDebris
	pv := "pvc-" + string(uuid.NewUUID())
	v, err := volumes.Create(ctx, bc, volumes.CreateOpts{Size: 1, Name: pv, Metadata: map[string]string{
		ccm.MetadataCluster: name, "csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "default",
		"csi.storage.k8s.io/pv/name": pv}}, nil).Extract()
	if err != nil {
		m.t.Fatalf("create the workload's volume: %v", err)
	}
	d.volume = v.ID
	fv, err := volumes.Create(ctx, bc, volumes.CreateOpts{Size: 1, Name: "pvc-" + string(uuid.NewUUID()),
		Metadata: map[string]string{ccm.MetadataCluster: name + "0"}}, nil).Extract()
	if err != nil {
		m.t.Fatalf("create the foreign volume: %v", err)
	}
	d.foreignVolume = fv.ID
	m.t.Cleanup(func() {
		for _, id := range []string{d.volume, d.foreignVolume} {
			_ = volumes.Delete(context.Background(), bc, id, volumes.DeleteOpts{Cascade: true}).ExtractErr()
		}
	})
	m.waitCloud("the volumes available", func() (bool, string) {
		var wait []string
		for _, id := range []string{d.volume, d.foreignVolume} {
			if v, err := m.cloud.GetVolume(ctx, id); err != nil || v.Status != "available" {
				wait = append(wait, fmt.Sprintf("volume %s %+v %v", id, v, err))
			}
		}
		return len(wait) == 0, strings.Join(wait, ", ")
	})
	// The VIP port as Octavia's network driver makes it (the harness' no-op driver makes none): owner Octavia,
	// named after the load balancer, on the cluster's subnet, where it holds the subnet against its deletion.
	p, err := ports.Create(ctx, nc, ports.CreateOpts{NetworkID: network, Name: "vip", DeviceOwner: ccm.OctaviaOwner,
		FixedIPs: []ports.IP{{SubnetID: subnet}}}).Extract()
	if err != nil {
		m.t.Fatalf("create the VIP port: %v", err)
	}
	d.vipPort = p.ID
	m.t.Cleanup(func() { _ = ports.Delete(context.Background(), nc, p.ID).ExtractErr() })
	lbName := "kube_service_" + name + "_default_web"
	lb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: lbName, Tags: []string{lbName},
		Description: "Kubernetes external service default/web from cluster " + name,
		VipPortID:   p.ID, VipSubnetID: subnet, VipAddress: p.FixedIPs[0].IPAddress}).Extract()
	if err != nil {
		m.t.Fatalf("create the workload's load balancer: %v", err)
	}
	d.lb = lb.ID
	portName, device := ccm.VIPPortName(lb.ID), "lb-"+lb.ID
	if _, err := ports.Update(ctx, nc, p.ID, ports.UpdateOpts{Name: &portName, DeviceID: &device}).Extract(); err != nil {
		m.t.Fatalf("name the VIP port after its load balancer: %v", err)
	}
	// The foreign load balancer: named as the cloud controller manager names one of cluster <name>0, its VIP on
	// the same subnet without a port (the no-op driver's), so it holds nothing against CAPO's teardown.
	foreign := "kube_service_" + name + "0_default_web"
	flb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: foreign, Tags: []string{foreign}, VipSubnetID: subnet}).Extract()
	if err != nil {
		m.t.Fatalf("create the foreign load balancer: %v", err)
	}
	d.foreignLB = flb.ID
	m.t.Cleanup(func() {
		for _, id := range []string{d.lb, d.foreignLB} {
			_ = loadbalancers.Delete(context.Background(), lc, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		}
	})
	m.waitCloud("the load balancers active", func() (bool, string) {
		var wait []string
		for _, id := range []string{d.lb, d.foreignLB} {
			if l, err := m.cloud.GetLoadBalancer(ctx, id); err != nil || l.ProvisioningStatus != "ACTIVE" {
				wait = append(wait, fmt.Sprintf("load balancer %s %+v %v", id, l, err))
			}
		}
		return len(wait) == 0, strings.Join(wait, ", ")
	})
	return d
}

func (m *capiMgmt) waitCloud(what string, cond func() (bool, string)) {
	m.t.Helper()
	opEventually(m.t, capiTimeout, what, cond)
}

// Left reports which of the debris the project still holds (read with the project's credentials): the cluster's
// ("volume", "load balancer", "VIP port") and the foreign ones ("foreign volume", "foreign load
// balancer").
func (d capiWorkloadDebris) Left(t testing.TB, cloud *openstack.Cloud) (cluster, foreign []string) {
	t.Helper()
	ctx := context.Background()
	exists := func(what string, err error) bool {
		if err != nil && !openstack.IsNotFound(err) {
			t.Fatalf("read %s: %v", what, err)
		}
		return err == nil
	}
	lbExists := func(id string) bool {
		lb, err := cloud.GetLoadBalancer(ctx, id)
		return exists("load balancer "+id, err) && lb.ProvisioningStatus != "DELETED"
	}
	if _, err := cloud.GetVolume(ctx, d.volume); exists("volume", err) {
		cluster = append(cluster, "volume "+d.volume)
	}
	if lbExists(d.lb) {
		cluster = append(cluster, "load balancer "+d.lb)
	}
	if _, err := cloud.GetPort(ctx, d.vipPort); exists("VIP port", err) {
		cluster = append(cluster, "VIP port "+d.vipPort)
	}
	if _, err := cloud.GetVolume(ctx, d.foreignVolume); exists("foreign volume", err) {
		foreign = append(foreign, "foreign volume")
	}
	if lbExists(d.foreignLB) {
		foreign = append(foreign, "foreign load balancer")
	}
	return cluster, foreign
}

// TestCAPIDeleteClusterDeorbits, for three enrolled Clusters (no control plane: their workload API never answers):
// c3's VitalsCluster, deleted by hand while its Cluster lives, is held and nothing is deleted; then, for each,
// `kubectl delete cluster` (c2's and c4's VitalsCluster deleted by the enrolment, c3's already deleting) ends with
// CAPO's teardown done, and Cinder, Octavia and Neutron holding nothing of the cluster, its volume, load balancer
// and VIP port included, while the foreign volume and load balancer remain. For c2 and c3 the VIP port
// holds the subnet: CAPO's network deletion fails until deorbit has deleted the load balancer and its port, and
// CAPO retries. c4 is a Cluster of a ClusterClass: Cluster API's topology controller asks the operator's
// BeforeClusterDelete hook (a Runtime Extension registered with an ExtensionConfig) and deletes nothing of the
// cluster until deorbit is through, so CAPO's teardown finds nothing in its way. The operator acts as the chart's
// ServiceAccount: every request it makes must be allowed, and the enrolment's permissions are used.
func TestCAPIDeleteClusterDeorbits(t *testing.T) {
	parallel(t, &capiCluster)
	m := capiOpen(t)
	helm := testenv.Helm(t)
	admin := m.env.Config(t)
	opInstallCRD(t, admin)
	vc := opClient(t, admin)
	nsOf := map[string]string{"c2": m.Namespace("capi-deorbit")}
	opNS := m.Namespace("capi-vitals")
	cr := applyChartRBAC(t, admin, helm, opNS, fmt.Sprintf("operator:\n  replicas: 1\n  capi:\n    enrol: true\n  secrets:\n    namespaces: [%s]\n", nsOf["c2"]))
	sa := cr.release + "-operator"
	extDir, extCA := extCert(t)
	extPort := freePort(t)
	opStart(t, operator.Options{RestConfig: cr.token(sa), Identity: "capi", // every namespace (the chart's default)
		LeaderElect: true, LeaderElectionNamespace: opNS, LeaderElectionID: "vitals-operator",
		LeaseDuration: 8 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		WriteTimeout: 4 * time.Second, CheckInterval: time.Second, CheckTimeout: 10 * time.Second,
		TrustedAuthURLs: []string{m.env.Tenant.AuthURL}, CAPIEnrol: true,
		RuntimeExtensionPort: extPort, RuntimeExtensionCertDir: extDir})
	// Cluster API's BeforeClusterDelete hook, served by this operator, registered for the test's namespace only
	m.Extension(fmt.Sprintf("https://127.0.0.1:%d", extPort), extCA, nsOf["c2"])

	nsOf["c3"], nsOf["c4"] = nsOf["c2"], nsOf["c2"]
	for _, tc := range []struct {
		name, cidr, pods string
		byHand           bool // the VitalsCluster deleted by hand first, while its Cluster lives
		topology         bool // a Cluster of a ClusterClass: Cluster API asks the BeforeClusterDelete hook first
	}{
		{name: "c2", cidr: "10.6.2.0/24", pods: "10.245.0.0/16"},
		{name: "c3", cidr: "10.6.3.0/24", pods: "10.246.0.0/16", byHand: true},
		{name: "c4", cidr: "10.6.4.0/24", pods: "10.247.0.0/16", topology: true},
	} {
		name, ns := tc.name, nsOf[tc.name]
		start := time.Now()
		var cl *clusterv1.Cluster
		if tc.topology {
			cl = m.TopologyCluster(ns, name, tc.cidr, tc.pods)
		} else {
			cl, _ = m.Cluster(ns, name, tc.cidr, tc.pods)
		}
		patch := client.MergeFrom(cl.DeepCopy())
		cl.Labels = map[string]string{clusterapi.EnrolLabel: "true"}
		if err := m.c.Patch(context.Background(), cl, patch); err != nil {
			t.Fatalf("label the Cluster for enrolment: %v", err)
		}
		osc := m.Ready(cl)
		t.Logf("the OpenStackCluster ready %.1f s after its creation", time.Since(start).Seconds())

		// Enrolled: the VitalsCluster's spec is CAPO's status, it is the Cluster's, Deorbit, proven and finalized.
		key := client.ObjectKey{Namespace: ns, Name: name}
		var got v1alpha1.VitalsCluster
		opEventually(t, capiTimeout, "the VitalsCluster enrolled, its cloud verified, its finalizer on", func() (bool, string) {
			if err := vc.Get(context.Background(), key, &got); err != nil {
				return false, err.Error()
			}
			verified := meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionCloudVerified)
			return verified && slices.Contains(got.Finalizers, v1alpha1.FinalizerDeorbit),
				fmt.Sprintf("verified %v, finalizers %v, conditions %v", verified, got.Finalizers, got.Status.Conditions)
		})
		t.Logf("the VitalsCluster enrolled and verified %.1f s after the Cluster's creation", time.Since(start).Seconds())
		s := osc.Status
		o := got.Spec.OpenStack
		for _, c := range []struct{ field, got, want string }{
			{"routerID", o.RouterID, s.Router.ID},
			{"networkID", o.NetworkID, s.Network.ID},
			{"subnetID", o.SubnetID, s.Network.Subnets[0].ID},
			{"securityGroupID", o.SecurityGroupID, s.WorkerSecurityGroup.ID},
			{"credentialsSecretRef", o.CredentialsSecretRef.Name, name + "-cloud-config"},
			{"clusterName", o.ClusterName, name},
			{"deletionPolicy", string(got.Spec.DeletionPolicy), string(v1alpha1.DeletionPolicyDeorbit)},
			{"podCIDRs", fmt.Sprint(got.Spec.PodCIDRs), "[" + tc.pods + "]"},
			{"kubeconfigSecretRef", got.Spec.KubeconfigSecretRef.Name, name + clusterapi.KubeconfigSuffix},
		} {
			if c.got != c.want {
				t.Errorf("VitalsCluster spec.%s = %q, want %q (from the Cluster and CAPO's status)", c.field, c.got, c.want)
			}
		}
		if ref, ok := clusterapi.OwnerOf(&got); !ok || ref.UID != cl.UID {
			t.Errorf("the VitalsCluster is not controlled by its Cluster: owners %+v", got.OwnerReferences)
		}
		if !clusterapi.MadeByEnrolment(&got) {
			t.Errorf("the VitalsCluster lacks the enrolment's label %s: labels %v", v1alpha1.LabelEnrolledBy, got.Labels)
		}
		if got.Status.ProjectID != m.env.ProjectID {
			t.Errorf("the VitalsCluster's project is %q, want CAPO's %s", got.Status.ProjectID, m.env.ProjectID)
		}
		// No control plane, no <cluster>-kubeconfig: the workload API never answers. The user's field (the enrolment
		// leaves it alone) shortens the wait for it from the default 10 minutes.
		grace := 20 * time.Second
		before := got.DeepCopy()
		got.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{Duration: grace}
		if err := vc.Patch(context.Background(), &got, client.MergeFrom(before)); err != nil {
			t.Fatalf("set the VitalsCluster's unreachableGracePeriod: %v", err)
		}

		debris := m.workloadDebris(name, s.Network.ID, s.Network.Subnets[0].ID)
		if held, foreign := debris.Left(t, m.cloud); len(held) != 3 || len(foreign) != 2 {
			t.Fatalf("before the deletion the project holds %v of the cluster and %v, want all of them", held, foreign)
		}

		// The VitalsCluster deleted by hand while its Cluster lives (kubectl delete vitalscluster, or a namespace
		// cleanup that reached it first): held by its finalizer, nothing deleted, and the condition says why. Its
		// Cluster living is the cluster's own word that it goes on, whatever its servers: this one has none.
		if tc.byHand {
			capiHeldWhileClusterLives(t, m, vc, &got, debris)
		}

		// kubectl delete cluster: watch the VitalsCluster's deorbit and the Cluster until both are gone.
		start = time.Now()
		if err := m.c.Delete(context.Background(), cl); err != nil {
			t.Fatalf("delete the Cluster: %v", err)
		}
		var last v1alpha1.VitalsCluster
		var phases, onCluster []string // deorbit's phases, the reasons of the Cluster's VitalsCleanedUp condition
		var vcGone, clGone, okToDelete time.Duration
		var early []string // Cluster API's teardown seen going on before deorbit was through
		opEventually(t, capiTimeout+2*grace, "the Cluster, its OpenStackCluster and its VitalsCluster gone", func() (bool, string) {
			ctx := context.Background()
			var cur v1alpha1.VitalsCluster
			switch err := vc.Get(ctx, key, &cur); {
			case apierrors.IsNotFound(err):
				if vcGone == 0 {
					vcGone = time.Since(start)
				}
			case err != nil:
				return false, err.Error()
			default:
				last = cur
				if d := cur.Status.Deorbit; d != nil && (len(phases) == 0 || phases[len(phases)-1] != d.Phase) {
					phases = append(phases, d.Phase)
				}
			}
			var state []string
			clNow, oscNow := &clusterv1.Cluster{}, &infrav1.OpenStackCluster{}
			for _, obj := range []client.Object{clNow, oscNow} {
				key := client.ObjectKey{Namespace: ns, Name: name}
				if obj == oscNow {
					key.Name = osc.Name // a topology's is named after the Cluster, with a suffix
				}
				err := m.c.Get(ctx, key, obj)
				switch {
				case err == nil:
					if c := meta.FindStatusCondition(clNow.Status.Conditions, clusterapi.ConditionCleanedUp); obj == clNow && c != nil &&
						(len(onCluster) == 0 || onCluster[len(onCluster)-1] != c.Reason) {
						onCluster = append(onCluster, c.Reason)
						t.Logf("the Cluster's %s condition: %s %s: %s", c.Type, c.Status, c.Reason, c.Message)
					}
					if _, ok := clNow.Annotations[runtimev1.OkToDeleteAnnotation]; ok && obj == clNow && okToDelete == 0 {
						okToDelete = time.Since(start)
					}
					// the VitalsCluster was read first, in this same look: the hook lets the deletion go on once deorbit
					// is done (or gave up), while its finalizer may still be on
					through := vcGone != 0 || last.Status.Deorbit != nil &&
						(last.Status.Deorbit.Phase == v1alpha1.DeorbitPhaseDone || last.Status.Deorbit.Phase == v1alpha1.DeorbitPhaseGaveUp)
					if tc.topology && !through && (okToDelete != 0 || !oscNow.DeletionTimestamp.IsZero()) && len(early) < 3 {
						early = append(early, fmt.Sprintf("at %.1f s: ok-to-delete after %.1f s, OpenStackCluster deleting %v, deorbit %s",
							time.Since(start).Seconds(), okToDelete.Seconds(), !oscNow.DeletionTimestamp.IsZero(), capiDeorbitSummary(&last)))
					}
					state = append(state, fmt.Sprintf("%T still there, finalizers %v", obj, obj.GetFinalizers()))
				case !apierrors.IsNotFound(err):
					return false, err.Error()
				}
			}
			if len(state) == 0 && clGone == 0 {
				clGone = time.Since(start)
			}
			if vcGone == 0 {
				state = append(state, "VitalsCluster still there: "+capiDeorbitSummary(&last))
			}
			return len(state) == 0, strings.Join(state, "; ")
		})
		t.Logf("after the Cluster's deletion: the VitalsCluster gone after %.1f s, the Cluster and its OpenStackCluster after %.1f s; deorbit's phases %v",
			vcGone.Seconds(), clGone.Seconds(), phases)
		t.Logf("the VitalsCluster's last status: %s", capiDeorbitSummary(&last))
		if tc.topology {
			// Held by the hook: Cluster API marks the Cluster ok-to-delete and deletes its infrastructure only once
			// deorbit is through. Without an extension asking to wait, it marks it at once.
			t.Logf("the Cluster marked %s %.1f s after its deletion", runtimev1.OkToDeleteAnnotation, okToDelete.Seconds())
			if len(early) > 0 {
				t.Errorf("Cluster API went on with the deletion before deorbit was through: %v", early)
			}
			if okToDelete == 0 {
				t.Errorf("the Cluster was never seen marked %s", runtimev1.OkToDeleteAnnotation)
			} else if okToDelete < grace {
				t.Errorf("the Cluster was marked %s %.1f s after its deletion, before deorbit could be through (the workload's grace alone is %s)",
					runtimev1.OkToDeleteAnnotation, okToDelete.Seconds(), grace)
			}
		}
		// the Cluster outlives the VitalsCluster's first steps (CAPO's network waits for the load balancer's port)
		if len(onCluster) == 0 {
			t.Errorf("the Cluster never showed deorbit's %s condition while it was deleted", clusterapi.ConditionCleanedUp)
		}
		// the Cluster's deletion proves the teardown, and still does once Cluster API has removed the Cluster
		// mid-deorbit (the record of it seen being deleted, for its UID)
		switch d := last.Status.Deorbit; {
		case d == nil || !strings.Contains(d.Interlock, "is being deleted") && !strings.Contains(d.Interlock, "was seen being deleted"):
			t.Errorf("deorbit's last status %s, want its interlock the Cluster's deletion", capiDeorbitSummary(&last))
		case d.OwnerDeletionSeen == nil || d.OwnerDeletionSeen.UID != cl.UID:
			t.Errorf("deorbit's record of the owner seen deleted is %+v, want the Cluster's uid %s", d.OwnerDeletionSeen, cl.UID)
		default:
			t.Logf("deorbit's interlock: %s", d.Interlock)
		}

		cluster, foreign := debris.Left(t, m.cloud)
		if len(cluster) != 0 {
			t.Errorf("after the Cluster's deletion the project still holds %v of the cluster's workload", cluster)
		}
		if len(foreign) != 2 {
			t.Errorf("the foreign resources left: %v, want the foreign volume and load balancer (deorbit must not touch them)", foreign)
		}
		if held := m.CloudHolds(s); len(held) != 0 {
			t.Errorf("after the Cluster's deletion the project still holds %v of CAPO's", held)
		}
		if failed := m.networkRetries(ns, osc.Name); tc.topology && len(failed) > 0 {
			// the hook held the teardown until deorbit had deleted the load balancer and its port
			t.Errorf("CAPO's teardown failed on what deorbit had not deleted yet: %v", failed)
		}
	}

	// the test's namespaces and cluster scope: the management apiserver may hold another test's leftovers, in
	// namespaces this release is not granted Secrets in
	var forbidden []string
	for _, c := range cr.rec.callsOf(sa) {
		if mine := c.Namespace == "" || c.Namespace == opNS || slices.Contains(slices.Collect(maps.Values(nsOf)), c.Namespace); mine && c.Code == http.StatusForbidden {
			forbidden = append(forbidden, fmt.Sprintf("%s in namespace %q", c.rbacPerm, c.Namespace))
		}
	}
	if len(forbidden) > 0 {
		t.Errorf("%s: forbidden (permissions the chart lacks): %s", sa, strings.Join(slices.Compact(slices.Sorted(slices.Values(forbidden))), "; "))
	}
	used := cr.used(sa)
	for _, p := range []rbacPerm{
		{"vitals.vitalsproject.io", "vitalsclusters", "create"}, {"vitals.vitalsproject.io", "vitalsclusters", "delete"},
		{"cluster.x-k8s.io", "clusters", "list"}, {"cluster.x-k8s.io", "clusters", "watch"}, {"cluster.x-k8s.io", "clusters", "get"},
		{"infrastructure.cluster.x-k8s.io", "openstackclusters", "list"}, {"infrastructure.cluster.x-k8s.io", "openstackclusters", "watch"},
		{"infrastructure.cluster.x-k8s.io", "openstackclusters", "get"}, {"cluster.x-k8s.io", "clusters/status", "patch"},
	} {
		if !used[p] {
			t.Errorf("%s: the enrolment never used %s", sa, p)
		}
	}
}

// capiHeldWhileClusterLives deletes the enrolled VitalsCluster got while its Cluster lives, and checks that it is
// held: CleanedUp False/NotConfirmed, saying why and how to go on, and every resource of the cluster still there.
func capiHeldWhileClusterLives(t *testing.T, m *capiMgmt, vc client.Client, got *v1alpha1.VitalsCluster, debris capiWorkloadDebris) {
	t.Helper()
	if err := vc.Delete(context.Background(), got); err != nil {
		t.Fatalf("delete the VitalsCluster: %v", err)
	}
	_, held := deorbitHeld(t, vc, client.ObjectKeyFromObject(got), capiTimeout)
	t.Logf("the VitalsCluster deleted while its Cluster lives: %s", held)
	for _, want := range []string{"nothing was deleted", "while it lives, the cluster's servers being gone proves nothing", "or delete its Cluster API Cluster"} {
		if !strings.Contains(held, want) {
			t.Errorf("the held VitalsCluster's condition does not say %q", want)
		}
	}
	time.Sleep(3 * time.Second) // a few more of the operator's looks
	if left, foreign := debris.Left(t, m.cloud); len(left) != 3 || len(foreign) != 2 {
		t.Fatalf("with the VitalsCluster deleted and its Cluster alive the project holds %v of the cluster and %v, want all of them", left, foreign)
	}
}

// networkRetries logs and returns CAPO's failed deletions of the OpenStackCluster (its Events): the race of its
// teardown with deorbit's, where no hook holds the teardown.
func (m *capiMgmt) networkRetries(ns, name string) []string {
	m.t.Helper()
	var evs corev1.EventList
	if err := m.c.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		m.t.Fatalf("list the Events of namespace %s: %v", ns, err)
	}
	var failed []string
	for _, e := range evs.Items {
		// CAPO's recorder capitalises only the first letter of a reason: Faileddeletenetwork
		if e.InvolvedObject.Kind == "OpenStackCluster" && e.InvolvedObject.Name == name && strings.HasPrefix(strings.ToLower(e.Reason), "faileddelete") {
			failed = append(failed, fmt.Sprintf("%s x%d (%s)", e.Reason, max(e.Count, 1), firstLine(e.Message)))
		}
	}
	m.t.Logf("CAPO's failed deletions during the teardown: %v", failed)
	return failed
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func capiDeorbitSummary(c *v1alpha1.VitalsCluster) string {
	cd := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCleanedUp)
	cond := "no CleanedUp condition"
	if cd != nil {
		cond = "CleanedUp " + string(cd.Status) + "/" + cd.Reason + ": " + cd.Message
	}
	return deorbitSummary(c.Status.Deorbit) + "; " + cond
}

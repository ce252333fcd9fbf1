package e2e

// Helpers of the scenarios on the workload cluster (testenv.Workload, hack/workload.sh): its kube-apiserver
// with kube-controller-manager, the OpenStack cloud controller manager and Cinder CSI, acting in a project of
// their own on the real Cinder and Octavia. PVCs become Cinder volumes, LoadBalancer Services Octavia load
// balancers; the cloud side is read with the project's own credentials.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/snapshots"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// Names the cloud controllers write.
const (
	// wlLBIDAnnotation: the OpenStack cloud controller manager's annotation with the Octavia load balancer's ID.
	wlLBIDAnnotation = "loadbalancer.openstack.org/load-balancer-id"
	// wlVolumeClusterKey: Cinder CSI's volume metadata naming the cluster (its --cluster).
	wlVolumeClusterKey = "cinder.csi.openstack.org/cluster"
	// wlCloudTimeout bounds every wait for the cloud controllers (seconds when idle; minutes on a loaded machine).
	wlCloudTimeout = 4 * time.Minute
)

// wlCluster is the workload cluster of one test, with clients to its API and to its project on the cloud.
type wlCluster struct {
	t     testing.TB
	env   testenv.WorkloadEnv
	cs    kubernetes.Interface
	dyn   dynamic.Interface
	cloud *openstack.Cloud // the tenant's credentials
}

var (
	wlSnapshots        = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
	wlSnapshotContents = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"}
)

func wlOpen(t testing.TB) *wlCluster {
	t.Helper()
	env := testenv.Workload(t)
	cfg := env.Config(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &wlCluster{t: t, env: env, cs: cs, dyn: dyn, cloud: opConnect(t, opAuth(t, env.Tenant), nil)}
	if got := w.cloud.ProjectID(); got != env.ProjectID {
		t.Fatalf("the tenant's token is scoped to project %s, want %s", got, env.ProjectID)
	}
	return w
}

// Namespace creates a namespace in the workload cluster, deleted at the end of the test.
func (w *wlCluster) Namespace(prefix string) string {
	w.t.Helper()
	ns, err := w.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("create namespace in the workload cluster: %v", err)
	}
	w.t.Cleanup(func() {
		_ = w.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// PVC creates a 1 GiB claim of the Cinder StorageClass.
func (w *wlCluster) PVC(ns, name string) {
	w.t.Helper()
	sc := w.env.StorageClass
	_, err := w.cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("create PVC %s/%s: %v", ns, name, err)
	}
}

// LBService creates a Service of type LoadBalancer.
func (w *wlCluster) LBService(ns, name string) {
	w.t.Helper()
	_, err := w.cs.CoreV1().Services(ns).Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("create Service %s/%s: %v", ns, name, err)
	}
}

// Volume waits until the claim is bound and returns its Cinder volume, available in the tenant's project
// and tagged with the cluster's name.
func (w *wlCluster) Volume(ns, name string) openstack.Volume {
	w.t.Helper()
	ctx := context.Background()
	var vol openstack.Volume
	opEventually(w.t, wlCloudTimeout, fmt.Sprintf("PVC %s/%s bound to an available Cinder volume", ns, name), func() (bool, string) {
		pvc, err := w.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
			return false, "phase " + string(pvc.Status.Phase)
		}
		pv, err := w.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if pv.Spec.CSI == nil {
			return false, "PV " + pv.Name + " is not a CSI volume"
		}
		v, err := w.cloud.GetVolume(ctx, pv.Spec.CSI.VolumeHandle)
		if err != nil {
			return false, err.Error()
		}
		vol = *v
		return v.Status == "available", "volume " + v.ID + " " + v.Status
	})
	if vol.ProjectID != "" && vol.ProjectID != w.env.ProjectID {
		w.t.Fatalf("volume %s of PVC %s/%s is in project %s, want the tenant's %s", vol.ID, ns, name, vol.ProjectID, w.env.ProjectID)
	}
	if got := vol.Metadata[wlVolumeClusterKey]; got != w.env.ClusterName {
		w.t.Fatalf("volume %s of PVC %s/%s: metadata %s = %q, want %q", vol.ID, ns, name, wlVolumeClusterKey, got, w.env.ClusterName)
	}
	return vol
}

// LoadBalancer waits until the Service has an ingress address and returns its Octavia load balancer,
// ACTIVE in the tenant's project and named after the cluster.
func (w *wlCluster) LoadBalancer(ns, name string) openstack.LoadBalancer {
	w.t.Helper()
	ctx := context.Background()
	var lb openstack.LoadBalancer
	opEventually(w.t, wlCloudTimeout, fmt.Sprintf("Service %s/%s with an ACTIVE Octavia load balancer", ns, name), func() (bool, string) {
		svc, err := w.cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		id := svc.Annotations[wlLBIDAnnotation]
		if len(svc.Status.LoadBalancer.Ingress) == 0 || id == "" {
			return false, fmt.Sprintf("ingress %v, annotation %q", svc.Status.LoadBalancer.Ingress, id)
		}
		l, err := w.cloud.GetLoadBalancer(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		lb = *l
		return l.ProvisioningStatus == "ACTIVE", "load balancer " + l.ID + " " + l.ProvisioningStatus
	})
	if lb.ProjectID != w.env.ProjectID {
		w.t.Fatalf("load balancer %s of Service %s/%s is in project %s, want the tenant's %s", lb.ID, ns, name, lb.ProjectID, w.env.ProjectID)
	}
	if prefix := w.LBNamePrefix(); !strings.HasPrefix(lb.Name, prefix) {
		w.t.Fatalf("load balancer %s of Service %s/%s is named %q, want the prefix %q", lb.ID, ns, name, lb.Name, prefix)
	}
	return lb
}

// Snapshot creates a VolumeSnapshot of the claim.
func (w *wlCluster) Snapshot(ns, name, pvc string) {
	w.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"volumeSnapshotClassName": w.env.SnapshotClass,
			"source":                  map[string]any{"persistentVolumeClaimName": pvc},
		},
	}}
	if _, err := w.dyn.Resource(wlSnapshots).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create VolumeSnapshot %s/%s: %v", ns, name, err)
	}
}

// CinderSnapshot waits until the VolumeSnapshot is ready to use and returns its Cinder snapshot's ID, available
// in the tenant's project.
func (w *wlCluster) CinderSnapshot(ns, name string) string {
	w.t.Helper()
	ctx := context.Background()
	bc, err := w.cloud.Client(openstack.ServiceBlockStorage)
	if err != nil {
		w.t.Fatal(err)
	}
	id := ""
	opEventually(w.t, wlCloudTimeout, fmt.Sprintf("VolumeSnapshot %s/%s ready with an available Cinder snapshot", ns, name), func() (bool, string) {
		vs, err := w.dyn.Resource(wlSnapshots).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
		content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
		if !ready || content == "" {
			return false, fmt.Sprintf("readyToUse %t, content %q", ready, content)
		}
		vsc, err := w.dyn.Resource(wlSnapshotContents).Get(ctx, content, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		id, _, _ = unstructured.NestedString(vsc.Object, "status", "snapshotHandle")
		if id == "" {
			return false, "no snapshot handle in " + content
		}
		s, err := snapshots.Get(ctx, bc, id).Extract()
		if err != nil {
			return false, err.Error()
		}
		return s.Status == "available", "snapshot " + id + " " + s.Status
	})
	return id
}

// CloudSnapshots lists the tenant's Cinder snapshots, by ID (the project holds the cluster's only).
func (w *wlCluster) CloudSnapshots() map[string]string {
	w.t.Helper()
	bc, err := w.cloud.Client(openstack.ServiceBlockStorage)
	if err != nil {
		w.t.Fatal(err)
	}
	pages, err := snapshots.List(bc, snapshots.ListOpts{}).AllPages(context.Background())
	if err != nil {
		w.t.Fatalf("list the tenant's snapshots: %v", err)
	}
	ss, err := snapshots.ExtractSnapshots(pages)
	if err != nil {
		w.t.Fatalf("list the tenant's snapshots: %v", err)
	}
	out := map[string]string{}
	for _, s := range ss {
		out[s.ID] = s.Status
	}
	return out
}

// LBNamePrefix is how the cloud controller manager names the cluster's load balancers.
func (w *wlCluster) LBNamePrefix() string { return "kube_service_" + w.env.ClusterName + "_" }

// CloudVolumes lists the tenant's volumes tagged with the cluster's name, by ID.
func (w *wlCluster) CloudVolumes() map[string]openstack.Volume {
	w.t.Helper()
	vs, err := w.cloud.ListVolumes(context.Background(), openstack.ListOpts{})
	if err != nil {
		w.t.Fatalf("list the tenant's volumes: %v", err)
	}
	out := map[string]openstack.Volume{}
	for _, v := range vs {
		if v.Metadata[wlVolumeClusterKey] == w.env.ClusterName {
			out[v.ID] = v
		}
	}
	return out
}

// CloudLBs lists the tenant's load balancers named after the cluster, by ID.
func (w *wlCluster) CloudLBs() map[string]openstack.LoadBalancer {
	w.t.Helper()
	lbs, err := w.cloud.ListLoadBalancers(context.Background(), openstack.ListOpts{ProjectID: w.env.ProjectID})
	if err != nil {
		w.t.Fatalf("list the tenant's load balancers: %v", err)
	}
	out := map[string]openstack.LoadBalancer{}
	for _, lb := range lbs {
		if strings.HasPrefix(lb.Name, w.LBNamePrefix()) {
			out[lb.ID] = lb
		}
	}
	return out
}

// Gone waits until Cinder and Octavia answer 404 for every volume and load balancer named.
func (w *wlCluster) Gone(volumes, lbs []string) {
	w.t.Helper()
	ctx := context.Background()
	opEventually(w.t, wlCloudTimeout, "volumes and load balancers gone from the cloud", func() (bool, string) {
		var left []string
		for _, id := range volumes {
			if _, err := w.cloud.GetVolume(ctx, id); !openstack.IsNotFound(err) {
				left = append(left, fmt.Sprintf("volume %s (%v)", id, err))
			}
		}
		for _, id := range lbs {
			if l, err := w.cloud.GetLoadBalancer(ctx, id); !openstack.IsNotFound(err) {
				st := ""
				if l != nil {
					st = l.ProvisioningStatus
				}
				left = append(left, fmt.Sprintf("load balancer %s %s (%v)", id, st, err))
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}

// Sweep deletes, at the end of a test, what the cluster left in the tenant's project and its namespaces'
// objects, so that the next test starts from an empty cluster.
func (w *wlCluster) Sweep() {
	w.t.Cleanup(func() {
		ctx := context.Background()
		if bc, err := w.cloud.Client(openstack.ServiceBlockStorage); err == nil {
			for id := range w.CloudSnapshots() {
				_ = snapshots.Delete(ctx, bc, id).ExtractErr()
			}
		}
		for id := range w.CloudLBs() {
			_ = w.cloud.DeleteLoadBalancer(ctx, id, true)
		}
		for id := range w.CloudVolumes() {
			_ = w.cloud.DeleteVolume(ctx, id, true)
		}
	})
}

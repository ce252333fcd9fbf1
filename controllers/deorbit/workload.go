package deorbit

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/remediation"
)

// VolumeSnapshotList is the CSI snapshot kind; a cluster without its CRD has no snapshots.
var VolumeSnapshotList = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshotList"}

// snapshots deletes every VolumeSnapshot (the snapshot controller and Cinder CSI then delete the Cinder
// snapshots, which would otherwise keep their volumes), each only if it still has the UID listed. It does
// not wait for them: the cloud does. A snapshot marked to keep (v1alpha1.AnnotationKeep), or taken of a
// claim marked so, is kept.
func (s *step) snapshots(ctx context.Context, cl client.Client) (bool, time.Time, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(VolumeSnapshotList)
	if err := cl.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return true, time.Time{}, nil
		}
		return false, time.Time{}, fmt.Errorf("list volume snapshots: %w", err)
	}
	keptClaims := map[string]bool{}
	if len(list.Items) > 0 {
		var pvcs corev1.PersistentVolumeClaimList
		if err := cl.List(ctx, &pvcs); err != nil {
			return false, time.Time{}, fmt.Errorf("list persistent volume claims: %w", err)
		}
		for i := range pvcs.Items {
			if Keep(pvcs.Items[i].Annotations) {
				keptClaims[pvcs.Items[i].Namespace+"/"+pvcs.Items[i].Name] = true
			}
		}
	}
	seen := map[string]types.UID{}
	for _, it := range list.Items {
		id := it.GetNamespace() + "/" + it.GetName()
		seen[id] = it.GetUID()
		r := s.track(v1alpha1.DeorbitVolumeSnapshot, id, it.GetName(), v1alpha1.DeorbitPending)
		claim, _, _ := unstructured.NestedString(it.Object, "spec", "source", "persistentVolumeClaimName")
		switch {
		case r.State != v1alpha1.DeorbitPending:
		case it.GetDeletionTimestamp() != nil:
			r.State = v1alpha1.DeorbitDeleting
		case Keep(it.GetAnnotations()):
			r.State, r.LastError = v1alpha1.DeorbitKept, fmt.Sprintf("volume snapshot %s carries %s: never deleted", id, v1alpha1.AnnotationKeep)
		case claim != "" && keptClaims[it.GetNamespace()+"/"+claim]:
			r.State, r.LastError = v1alpha1.DeorbitKept, fmt.Sprintf("its claim %s/%s carries %s: never deleted", it.GetNamespace(), claim, v1alpha1.AnnotationKeep)
		}
	}
	var ds []deletion
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if r.Type != v1alpha1.DeorbitVolumeSnapshot {
			continue
		}
		uid, ok := seen[r.ID]
		if !ok {
			if r.State != v1alpha1.DeorbitKept {
				r.State = v1alpha1.DeorbitGone
			}
			continue
		}
		if r.State != v1alpha1.DeorbitPending {
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: VolumeSnapshotList.Group, Version: VolumeSnapshotList.Version, Kind: "VolumeSnapshot"})
		ns, name := splitKey(r.ID)
		obj.SetNamespace(ns)
		obj.SetName(name)
		ds = append(ds, deletion{r: r, action: s.workloadAction(VerbDeleteVolumeSnapshot, "volumesnapshot", r.ID),
			del:  func(ctx context.Context) error { return deleteObject(ctx, cl, obj, &uid) },
			gone: gone})
	}
	return s.workloadDeletes(ctx, v1alpha1.DeorbitVolumeSnapshot, ds)
}

// claims remembers the Cinder volume of every PersistentVolume (before its claim goes), then deletes
// the claims bound to them: the provisioner deletes the volumes, which the cloud confirms later.
// A volume of a PersistentVolume with reclaim policy Retain is kept; a Failed one is not waited on. A claim
// or PersistentVolume marked to keep (v1alpha1.AnnotationKeep) keeps both: the claim is not deleted.
func (s *step) claims(ctx context.Context, cl client.Client) (bool, time.Time, error) {
	pvs, keptClaims, err := readClaims(ctx, cl)
	if err != nil {
		return false, time.Time{}, err
	}
	type claim struct {
		volume string
		pv     *corev1.PersistentVolume
	}
	var claims []claim
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		vol := CinderVolumeID(pv)
		if vol == "" {
			continue
		}
		// a kept claim keeps its volume, and a kept volume its claim (deleting it would delete the volume)
		keep := markedKeep(pv, keptClaims)
		if keep != "" {
			keep += ": never deleted"
		}
		v := s.track(v1alpha1.DeorbitVolume, vol, pv.Name, v1alpha1.DeorbitPending)
		switch {
		case v.State != v1alpha1.DeorbitPending:
		case keep != "":
			v.State, v.LastError = v1alpha1.DeorbitKept, keep
		case pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain:
			v.State = v1alpha1.DeorbitKept
			v.LastError = fmt.Sprintf("persistent volume %s has reclaim policy Retain", pv.Name)
		}
		if ref := pv.Spec.ClaimRef; ref != nil && pv.Status.Phase == corev1.VolumeBound {
			c := s.track(v1alpha1.DeorbitClaim, ref.Namespace+"/"+ref.Name, pv.Name, v1alpha1.DeorbitPending)
			if keep != "" && c.State == v1alpha1.DeorbitPending {
				c.State, c.LastError = v1alpha1.DeorbitKept, keep
			}
		}
		claims = append(claims, claim{volume: vol, pv: pv})
	}
	// A claim still pending that no PersistentVolume shows bound any more went (or was unbound) since it
	// was tracked: e.g. its delete was sent by an operator killed before it recorded it. It is gone, not
	// waited on for ever.
	bound := map[string]bool{}
	for _, c := range claims {
		if ref := c.pv.Spec.ClaimRef; ref != nil && c.pv.Status.Phase == corev1.VolumeBound {
			bound[ref.Namespace+"/"+ref.Name] = true
		}
	}
	for i := range s.st.Resources {
		if r := &s.st.Resources[i]; r.Type == v1alpha1.DeorbitClaim && r.State == v1alpha1.DeorbitPending && !bound[r.ID] {
			r.State, r.LastError, r.NextAttempt = v1alpha1.DeorbitGone, "", nil
		}
	}
	// Pointers only now: tracking new resources may have moved them.
	var ds []deletion
	for _, c := range claims {
		ref := c.pv.Spec.ClaimRef
		if ref == nil || c.pv.Status.Phase != corev1.VolumeBound {
			continue
		}
		r := s.find(v1alpha1.DeorbitClaim, ref.Namespace+"/"+ref.Name)
		if r.State != v1alpha1.DeorbitPending {
			continue
		}
		obj := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
		uid := ref.UID
		ds = append(ds, deletion{r: r, action: s.workloadAction(VerbDeletePVC, "pvc", r.ID),
			del:  func(ctx context.Context) error { return deleteObject(ctx, cl, obj, &uid) },
			gone: gone})
	}
	done, next, err := s.workloadDeletes(ctx, v1alpha1.DeorbitClaim, ds)
	// A volume whose claim went (or whose volume was released with reclaim policy Delete) is the
	// provisioner's to delete: wait for the cloud to confirm. Failed and unbound ones wait for the sweep.
	for _, c := range claims {
		v := s.find(v1alpha1.DeorbitVolume, c.volume)
		if v.State != v1alpha1.DeorbitPending || v.Attempts > 0 {
			continue
		}
		switch c.pv.Status.Phase {
		case corev1.VolumeBound:
			if c.pv.Spec.ClaimRef == nil {
				continue
			}
			if r := s.find(v1alpha1.DeorbitClaim, c.pv.Spec.ClaimRef.Namespace+"/"+c.pv.Spec.ClaimRef.Name); r != nil &&
				(r.State == v1alpha1.DeorbitDeleting || r.State == v1alpha1.DeorbitGone) {
				v.State = v1alpha1.DeorbitDeleting
			}
		case corev1.VolumeReleased:
			if c.pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
				v.State = v1alpha1.DeorbitDeleting
			}
		}
	}
	return done, next, err
}

// withServices runs the LoadBalancer Services' chain first, then phase: the load balancers (the slower
// chain) start deleting at the first step, independent of the snapshots and claims. The phase completes
// with phase alone; the LoadBalancerServices phase waits for the Services' chain after it. Once an earlier
// list found Services and every one of them is deleting, gone or settled, the chain is not listed again
// until the LoadBalancerServices phase (which lists afresh before it completes): the steps of a large
// teardown spend their requests on deletes.
func (s *step) withServices(phase func(context.Context, client.Client) (bool, time.Time, error)) func(context.Context, client.Client) (bool, time.Time, error) {
	return func(ctx context.Context, cl client.Client) (bool, time.Time, error) {
		if s.servicesIssued() {
			return phase(ctx, cl)
		}
		svcDone, svcNext, err := s.services(ctx, cl)
		if err != nil {
			return false, time.Time{}, err
		}
		done, next, err := phase(ctx, cl)
		if err != nil || done || svcDone {
			return done, next, err
		}
		return false, minTime(next, svcNext), nil
	}
}

// servicesIssued reports whether Services are tracked and none of them is pending.
func (s *step) servicesIssued() bool {
	n := 0
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if r.Type != v1alpha1.DeorbitService {
			continue
		}
		if r.State == v1alpha1.DeorbitPending {
			return false
		}
		n++
	}
	return n > 0
}

// services remembers the Octavia load balancer of every LoadBalancer Service (the ID the cloud
// controller manager recorded, else its name), then deletes the Services: the cloud controller manager
// deletes the load balancers, which the cloud confirms later.
func (s *step) services(ctx context.Context, cl client.Client) (bool, time.Time, error) {
	var svcs corev1.ServiceList
	if err := cl.List(ctx, &svcs); err != nil {
		return false, time.Time{}, fmt.Errorf("list services: %w", err)
	}
	var ours []*corev1.Service
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		ours = append(ours, svc)
		r := s.track(v1alpha1.DeorbitService, svc.Namespace+"/"+svc.Name, svc.Name, v1alpha1.DeorbitPending)
		if svc.DeletionTimestamp != nil && r.State == v1alpha1.DeorbitPending {
			r.State = v1alpha1.DeorbitDeleting
		}
		s.track(v1alpha1.DeorbitLoadBalancer, svc.Annotations[ccm.AnnotationLoadBalancerID], ccm.LoadBalancerName(s.in.Target.ClusterName, svc.Namespace, svc.Name), v1alpha1.DeorbitPending)
	}
	// A Service still pending that the list no longer shows went since it was tracked.
	listed := map[string]bool{}
	for _, svc := range ours {
		listed[svc.Namespace+"/"+svc.Name] = true
	}
	for i := range s.st.Resources {
		if r := &s.st.Resources[i]; r.Type == v1alpha1.DeorbitService && r.State == v1alpha1.DeorbitPending && !listed[r.ID] {
			r.State, r.LastError, r.NextAttempt = v1alpha1.DeorbitGone, "", nil
		}
	}
	var ds []deletion
	for _, svc := range ours {
		r := s.find(v1alpha1.DeorbitService, svc.Namespace+"/"+svc.Name)
		if r.State != v1alpha1.DeorbitPending {
			continue
		}
		obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}}
		uid := svc.UID
		ds = append(ds, deletion{r: r, action: s.workloadAction(VerbDeleteService, "service", r.ID),
			del:  func(ctx context.Context) error { return deleteObject(ctx, cl, obj, &uid) },
			gone: gone})
	}
	done, next, err := s.workloadDeletes(ctx, v1alpha1.DeorbitService, ds)
	for _, svc := range ours {
		r := s.find(v1alpha1.DeorbitService, svc.Namespace+"/"+svc.Name)
		if r.State != v1alpha1.DeorbitDeleting && r.State != v1alpha1.DeorbitGone {
			continue
		}
		lb := s.track(v1alpha1.DeorbitLoadBalancer, svc.Annotations[ccm.AnnotationLoadBalancerID], ccm.LoadBalancerName(s.in.Target.ClusterName, svc.Namespace, svc.Name), "")
		if lb.State == v1alpha1.DeorbitPending && lb.Attempts == 0 {
			lb.State = v1alpha1.DeorbitDeleting
		}
	}
	return done, next, err
}

// workloadDeletes runs the deletes of a Kubernetes phase; the phase is complete once no object of
// typ is pending (deleted, gone, kept, or a dry run's).
func (s *step) workloadDeletes(ctx context.Context, typ string, ds []deletion) (bool, time.Time, error) {
	s.deleteAll(ctx, ds)
	var pending []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		if r := &s.st.Resources[i]; r.Type == typ && r.State == v1alpha1.DeorbitPending {
			pending = append(pending, r)
		}
	}
	if len(pending) == 0 {
		return true, time.Time{}, nil
	}
	return false, minTime(nextAttempt(pending), s.now.Add(s.e.poll())), nil
}

func (s *step) workloadAction(verb, kind, id string) remediation.Action {
	return remediation.Action{Verb: verb, Kind: kind, ID: id, Removal: true}
}

// gone: the object is not found, or it is another object of the same name (its UID differs).
func gone(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsConflict(err) }

// deleteObject deletes obj in the background (dependents too), only if it still has uid (nil: any).
func deleteObject(ctx context.Context, cl client.Client, obj client.Object, uid *types.UID) error {
	opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
	if uid != nil && *uid != "" {
		opts = append(opts, client.Preconditions{UID: uid})
	}
	if err := cl.Delete(ctx, obj, opts...); err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// CinderVolumeID is the Cinder volume behind a PersistentVolume ("" when it is not Cinder's): the
// Cinder CSI driver's volume handle, or the in-tree cinder volume ID.
func CinderVolumeID(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.CSI != nil && pv.Spec.CSI.Driver == ccm.CinderCSIDriver:
		return pv.Spec.CSI.VolumeHandle
	case pv.Spec.Cinder != nil:
		return pv.Spec.Cinder.VolumeID
	}
	return ""
}

func splitKey(id string) (ns, name string) {
	for i := 0; i < len(id); i++ {
		if id[i] == '/' {
			return id[:i], id[i+1:]
		}
	}
	return "", id
}

// Keep reports whether annotations (a claim's, a PersistentVolume's) or a Cinder volume's metadata mark it to
// keep through deorbit: v1alpha1.AnnotationKeep is true as Kubernetes parses booleans ("true", "True", "1", ...).
func Keep(marks map[string]string) bool { return v1alpha1.Marked(marks, v1alpha1.AnnotationKeep) }

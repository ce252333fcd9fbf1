// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package deorbit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// DefaultRecordInterval is how often a live cluster with deletionPolicy Deorbit is looked at for its record
// (status.deorbit.seen): the servers its selector matches and the keep ledger.
const DefaultRecordInterval = 5 * time.Minute

// Bounds of the record (the CRD's MaxItems).
const (
	maxSeenServers = 1000
	maxKeep        = 5000
)

// Reasons of the ServersSelected condition.
const (
	ReasonServersMatched  = "Matched"
	ReasonNoServerMatched = "NoServerMatched"
	ReasonNoSelector      = "NoSelector"
	ReasonCloudUnverified = "CloudUnverified"
	ReasonServersUnread   = "ServersUnread"
)

// record looks at a live cluster whose deletionPolicy is Deorbit, at most every Options.RecordInterval, and writes
// status.deorbit.seen: the servers its selector matches now (an earlier record stays while it matches none, and
// the ServersSelected condition warns), and the keep ledger from its workload cluster (an earlier ledger stays
// while it cannot be read). Its teardown reads both without the selector's or the workload API's word.
func (r *Reconciler) record(ctx context.Context, c *v1alpha1.VitalsCluster) (ctrl.Result, error) {
	if c.Spec.Deletion() != v1alpha1.DeletionPolicyDeorbit || !SettingsOf(c).Enabled || c.Spec.KubeconfigSecretRef == nil {
		return ctrl.Result{}, nil
	}
	every := r.o.RecordInterval
	if every <= 0 {
		every = DefaultRecordInterval
	}
	now := r.d.Clock.Now()
	seen := &v1alpha1.DeorbitSeen{}
	if c.Status.Deorbit != nil && c.Status.Deorbit.Seen != nil {
		seen = c.Status.Deorbit.Seen.DeepCopy()
	}
	if t := seen.LastRecordTime; t != nil && now.Before(t.Add(every)) {
		return ctrl.Result{RequeueAfter: t.Add(every).Sub(now)}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.StepTimeout)
	defer cancel()
	log := logf.FromContext(ctx)
	retry := false // the servers could not be looked at: again soon, not at the interval
	cond := metav1.Condition{Type: v1alpha1.ConditionServersSelected}
	scope, err := r.d.Tenancy.Resolve(ctx, c)
	if r.d.Checks != nil {
		r.d.Checks.Set(client.ObjectKeyFromObject(c), remediation.CheckCloud, err)
	}
	switch {
	case err != nil:
		cond.Status, cond.Reason = metav1.ConditionUnknown, ReasonCloudUnverified
		cond.Message = "the cloud is not verified: the cluster's servers could not be looked at (see CloudVerified)"
		retry = true
	default:
		m, err := matchServers(ctx, c, scope.Cloud, scope.ProjectID)
		switch {
		case m.which == "":
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNoSelector
			cond.Message = "neither spec.controllers.flight.servers.metadata nor spec.openstack.networkID tells the cluster's servers apart: " +
				"its servers being gone can never prove its teardown (only its Cluster API owner's deletion or the confirmation annotation can)"
		case err != nil:
			log.V(1).Info("deorbit record: servers unread", "error", err.Error())
			cond.Status, cond.Reason = metav1.ConditionUnknown, ReasonServersUnread
			cond.Message = "the project's servers could not be listed; the record of the cluster's servers is unchanged"
			retry = true
		case len(m.up)+len(m.going) == 0:
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNoServerMatched
			cond.Message = fmt.Sprintf("the selector (%s) matches no server in project %s: check it for a typo. Until it matches the cluster's servers, "+
				"their being gone proves nothing of a teardown (%d servers recorded earlier in status.deorbit.seen.servers still count)", m.which, scope.ProjectID, len(seen.Servers))
		default:
			ids := append(append([]string(nil), m.up...), m.going...)
			slices.Sort(ids)
			seen.Servers, seen.ServersTime = ids[:min(len(ids), maxSeenServers)], &metav1.Time{Time: now}
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonServersMatched
			cond.Message = fmt.Sprintf("the selector (%s) matches %d servers in project %s, recorded in status.deorbit.seen.servers: "+
				"the servers-gone interlock proves a teardown only by these being gone", m.which, len(ids), scope.ProjectID)
		}
	}
	if keep, err := r.ledger(ctx, c); err != nil {
		log.V(1).Info("deorbit record: keep ledger not read", "error", err.Error())
	} else {
		seen.Keep, seen.KeepTime = keep, &metav1.Time{Time: now}
	}
	next := every
	if retry {
		next = min(every, NotConfirmedRequeue)
	} else {
		seen.LastRecordTime = &metav1.Time{Time: now}
	}
	own := pass.Owned{Owner: Name, Fields: []string{Name}, Types: []string{v1alpha1.ConditionServersSelected}, Conditions: []metav1.Condition{cond}}
	own.Status.Deorbit = &v1alpha1.DeorbitStatus{Seen: seen}
	if _, err := r.d.Writer.Write(ctx, c, own); err != nil {
		return ctrl.Result{}, err
	}
	log.V(1).Info("deorbit record", "servers", len(seen.Servers), "keep", len(seen.Keep), "selected", cond.Reason)
	return ctrl.Result{RequeueAfter: next}, nil
}

// ledger reads the workload cluster's keep ledger, uncached: a failed or partial read is an error, never an
// empty ledger.
func (r *Reconciler) ledger(ctx context.Context, c *v1alpha1.VitalsCluster) ([]v1alpha1.DeorbitKeepEntry, error) {
	if r.d.Workload == nil {
		return nil, fmt.Errorf("the operator has no workload access")
	}
	wc, err := r.d.Workload.For(ctx, c)
	if err != nil {
		return nil, err
	}
	return KeepLedger(ctx, wc.Client())
}

// VolumeSnapshotContentList is the CSI snapshot contents' kind.
var VolumeSnapshotContentList = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshotContentList"}

// KeepLedger is what cl says to keep through a teardown: the Cinder volume of every PersistentVolume with reclaim
// policy Retain or marked v1alpha1.AnnotationKeep, or whose claim is so marked; the Cinder snapshot of every
// VolumeSnapshot marked so, or taken of such a claim. Sorted by type and ID, at most maxKeep.
func KeepLedger(ctx context.Context, cl client.Reader) ([]v1alpha1.DeorbitKeepEntry, error) {
	pvs, keptClaims, err := readClaims(ctx, cl)
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.DeorbitKeepEntry
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		vol := CinderVolumeID(pv)
		if vol == "" {
			continue
		}
		why := markedKeep(pv, keptClaims)
		if why == "" && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain {
			why = "persistent volume " + pv.Name + " has reclaim policy Retain"
		}
		if why != "" {
			out = append(out, v1alpha1.DeorbitKeepEntry{Type: v1alpha1.DeorbitVolume, ID: vol, Name: pv.Name, Why: why})
		}
	}
	snaps, err := keptSnapshots(ctx, cl, keptClaims)
	if err != nil {
		return nil, err
	}
	return sortedLedger(append(out, snaps...)), nil
}

// readClaims lists cl's PersistentVolumes and the claims marked v1alpha1.AnnotationKeep (by namespace/name),
// both completely: a failed list is an error.
func readClaims(ctx context.Context, cl client.Reader) (*corev1.PersistentVolumeList, map[string]bool, error) {
	var pvs corev1.PersistentVolumeList
	if err := cl.List(ctx, &pvs); err != nil {
		return nil, nil, fmt.Errorf("list persistent volumes: %w", err)
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := cl.List(ctx, &pvcs); err != nil {
		return nil, nil, fmt.Errorf("list persistent volume claims: %w", err)
	}
	keptClaims := map[string]bool{}
	for i := range pvcs.Items {
		if Keep(pvcs.Items[i].Annotations) {
			keptClaims[pvcs.Items[i].Namespace+"/"+pvcs.Items[i].Name] = true
		}
	}
	return &pvs, keptClaims, nil
}

// markedKeep says why pv is kept by a keep marker, on it or on its claim ("" when neither is marked).
func markedKeep(pv *corev1.PersistentVolume, keptClaims map[string]bool) string {
	switch ref := pv.Spec.ClaimRef; {
	case Keep(pv.Annotations):
		return "persistent volume " + pv.Name + " carries " + v1alpha1.AnnotationKeep
	case ref != nil && keptClaims[ref.Namespace+"/"+ref.Name]:
		return "its claim " + ref.Namespace + "/" + ref.Name + " carries " + v1alpha1.AnnotationKeep
	}
	return ""
}

// sortedLedger is ledger sorted by type and ID, at most maxKeep.
func sortedLedger(ledger []v1alpha1.DeorbitKeepEntry) []v1alpha1.DeorbitKeepEntry {
	slices.SortFunc(ledger, func(a, b v1alpha1.DeorbitKeepEntry) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID))
	})
	return ledger[:min(len(ledger), maxKeep)]
}

// keptSnapshots are the Cinder snapshots of the VolumeSnapshots marked to keep, or of kept claims (none without
// the snapshot CRDs).
func keptSnapshots(ctx context.Context, cl client.Reader, keptClaims map[string]bool) ([]v1alpha1.DeorbitKeepEntry, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(VolumeSnapshotList)
	if err := cl.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list volume snapshots: %w", err)
	}
	kept := map[string]string{} // namespace/name -> why
	for _, it := range list.Items {
		id := it.GetNamespace() + "/" + it.GetName()
		claim, _, _ := unstructured.NestedString(it.Object, "spec", "source", "persistentVolumeClaimName")
		switch {
		case Keep(it.GetAnnotations()):
			kept[id] = "volume snapshot " + id + " carries " + v1alpha1.AnnotationKeep
		case claim != "" && keptClaims[it.GetNamespace()+"/"+claim]:
			kept[id] = "its claim " + it.GetNamespace() + "/" + claim + " carries " + v1alpha1.AnnotationKeep
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	contents := &unstructured.UnstructuredList{}
	contents.SetGroupVersionKind(VolumeSnapshotContentList)
	if err := cl.List(ctx, contents); err != nil {
		return nil, fmt.Errorf("list volume snapshot contents: %w", err)
	}
	var out []v1alpha1.DeorbitKeepEntry
	for _, it := range contents.Items {
		ns, _, _ := unstructured.NestedString(it.Object, "spec", "volumeSnapshotRef", "namespace")
		name, _, _ := unstructured.NestedString(it.Object, "spec", "volumeSnapshotRef", "name")
		handle, _, _ := unstructured.NestedString(it.Object, "status", "snapshotHandle")
		if why, ok := kept[ns+"/"+name]; ok && handle != "" {
			out = append(out, v1alpha1.DeorbitKeepEntry{Type: v1alpha1.DeorbitSnapshot, ID: handle, Name: ns + "/" + name, Why: why})
		}
	}
	return out, nil
}

// SelectedServers is what c's servers' selector matches in project now (`vitals doctor`'s check, and the
// ServersSelected condition's rule): the selector in words ("" without one), and the IDs of the servers up and
// being deleted.
func SelectedServers(ctx context.Context, c *v1alpha1.VitalsCluster, cloud interface {
	ListServers(ctx context.Context, opts openstack.ListOpts) ([]openstack.Server, error)
	ListPorts(ctx context.Context, opts openstack.ListOpts) ([]openstack.Port, error)
}, project string) (which string, up, going []string, err error) {
	m, err := matchServers(ctx, c, cloud, project)
	return m.which, m.up, m.going, err
}

// matched is what a cluster's selector matches in its project now.
type matched struct {
	which     string   // the selector, in words ("": none)
	up, going []string // IDs of the servers matched, up and being deleted
	listed    map[string]openstack.Server
}

// matchServers lists the project's servers and finds the cluster's: those carrying
// spec.controllers.flight.servers.metadata or, without metadata, those with a port on spec.openstack.networkID
// (flight's rule, without the Nodes' word). Without either, which is "" and nothing is listed.
func matchServers(ctx context.Context, c *v1alpha1.VitalsCluster, cloud serverLister, project string) (matched, error) {
	md, network := c.Spec.Controllers.Flight.Servers.Metadata, c.Spec.OpenStack.NetworkID
	var m matched
	switch {
	case len(md) > 0:
		m.which = "servers with the metadata of spec.controllers.flight.servers.metadata"
	case network != "":
		m.which = "servers with a port on network " + network
	default:
		return m, nil
	}
	servers, err := cloud.ListServers(ctx, openstack.ListOpts{ProjectID: project})
	if err != nil {
		return m, fmt.Errorf("list servers: %w", err)
	}
	onNetwork := map[string]bool{}
	if len(md) == 0 {
		ports, err := cloud.ListPorts(ctx, openstack.ListOpts{ProjectID: project, NetworkID: network})
		if err != nil {
			return m, fmt.Errorf("list ports: %w", err)
		}
		for _, p := range ports {
			if p.NetworkID == network && p.DeviceID != "" {
				onNetwork[p.DeviceID] = true
			}
		}
	}
	m.listed = make(map[string]openstack.Server, len(servers))
	for _, sv := range servers {
		m.listed[sv.ID] = sv
		mine := onNetwork[sv.ID]
		if len(md) > 0 {
			mine = true
			for k, v := range md {
				if got, ok := sv.Metadata[k]; !ok || got != v {
					mine = false
				}
			}
		}
		if !mine {
			continue
		}
		if serverGoing(sv) {
			m.going = append(m.going, sv.ID)
		} else {
			m.up = append(m.up, sv.ID)
		}
	}
	slices.Sort(m.up)
	slices.Sort(m.going)
	return m, nil
}

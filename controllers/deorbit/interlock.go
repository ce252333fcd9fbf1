// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package deorbit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/openstack"
)

// Kinds of proof that a cluster is going (what deletionPolicy Deorbit needs before it deletes anything).
const (
	proofConfirmed = "confirmed"
	proofOwner     = "owner"
	proofServers   = "servers"
)

// serversProofMaxAge is how long a proof that the cluster's servers are gone serves the steps that follow,
// before the project is listed again (two lists per look: the cluster's steps come as often as every 250 ms).
const serversProofMaxAge = 30 * time.Second

// NotConfirmedRequeue is how often a deleted cluster whose deletion is not proven is looked at again (its owner
// and its servers change without an event on the VitalsCluster; the annotation and the policy do not).
const NotConfirmedRequeue = 30 * time.Second

// proof is what made a cluster's interlock hold at a step, or why nothing did.
type proof struct {
	kind string // "" when nothing holds
	// why says what holds (status.deorbit.interlock), or why each interlock did not.
	why []string
}

func (p proof) holds() bool { return p.kind != "" }

// recheck is the interlock the fence of each write checks again on the cluster as the API server has it then:
// the deletion policy still Deorbit, and a confirmation that made the proof still naming the cluster. The owner's
// deletion cannot be undone and the servers' absence is checked at each step.
func (p proof) recheck(uid types.UID) func(live *v1alpha1.VitalsCluster) string {
	return func(live *v1alpha1.VitalsCluster) string {
		if d := live.Spec.Deletion(); d != v1alpha1.DeletionPolicyDeorbit {
			return "deletionPolicy is " + string(d) + " now: nothing more is deleted"
		}
		if p.kind == proofConfirmed && live.Annotations[v1alpha1.AnnotationConfirmDeorbit] != string(uid) {
			return "the confirmation (annotation " + v1alpha1.AnnotationConfirmDeorbit + ") that allowed the teardown was withdrawn"
		}
		return ""
	}
}

// serverLister lists what tells the cluster's servers apart: the project's servers and their ports.
type serverLister interface {
	ListServers(ctx context.Context, opts openstack.ListOpts) ([]openstack.Server, error)
	ListPorts(ctx context.Context, opts openstack.ListOpts) ([]openstack.Port, error)
}

// interlock proves that c's cluster itself is going, cheapest proof first: the annotation confirming the
// deletion names c's UID; c's Cluster API owner (or its OpenStackCluster) is being deleted, and not moved by
// clusterctl; or no server of the cluster is left in the project but those being deleted (servers is nil
// without a verified cloud). Without a proof, why says what each interlock found.
func (r *Reconciler) interlock(ctx context.Context, c *v1alpha1.VitalsCluster, servers serverLister, project string) proof {
	if moved, why := movedAway(c); moved {
		return proof{why: []string{why}} // before any other proof: a confirmation made for this copy moves with it
	}
	var why []string
	switch got := c.Annotations[v1alpha1.AnnotationConfirmDeorbit]; got {
	case string(c.UID):
		return proof{kind: proofConfirmed, why: []string{"confirmed by annotation " + v1alpha1.AnnotationConfirmDeorbit + " naming the VitalsCluster's uid " + string(c.UID)}}
	case "":
		why = append(why, "no annotation "+v1alpha1.AnnotationConfirmDeorbit+" confirms it")
	default:
		why = append(why, fmt.Sprintf("annotation %s names uid %q, not this VitalsCluster's %s (a confirmation is for one resource, not for a later one of the same name)",
			v1alpha1.AnnotationConfirmDeorbit, got, c.UID))
	}
	owner, msg := r.ownerGoing(ctx, c)
	switch owner {
	case ownerGoing:
		return proof{kind: proofOwner, why: []string{msg}}
	case ownerLives, ownerUnread:
		// A Cluster API owner that lives (or could not be read) is the cluster's own word that it goes on:
		// its servers being gone proves nothing then (a cluster scaled to zero, or whose control plane is
		// not up yet, has volumes and load balancers too).
		return proof{why: append(why, msg+"; while it lives, the cluster's servers being gone proves nothing")}
	}
	why = append(why, msg)
	held, msg := r.serversGone(ctx, c, servers, project)
	if held {
		return proof{kind: proofServers, why: []string{msg}}
	}
	return proof{why: append(why, msg)}
}

// movedAway reports whether c is being deleted by clusterctl move, which copies a Cluster's VitalsCluster to the
// new management cluster with the Cluster (the CRD's clusterctl label puts it in the move) and then deletes it here,
// annotated, and takes its finalizers off itself: the cluster lives on, nothing of it may be deleted.
func movedAway(c *v1alpha1.VitalsCluster) (bool, string) {
	if _, ok := c.Annotations[clusterapi.DeleteForMoveAnnotation]; !ok {
		return false, ""
	}
	return true, "deleted by clusterctl move (annotation " + clusterapi.DeleteForMoveAnnotation + "): the cluster moved to another management cluster and lives on, nothing of it is deleted"
}

// What ownerGoing found of a VitalsCluster's Cluster API owner.
type ownerState int

const (
	ownerAbsent ownerState = iota // no owner, or it is gone (moved, or deleted while the operator was away)
	ownerGoing                    // it is being torn down (clusterapi.Teardown)
	ownerLives                    // it is there and not being torn down (or only moved)
	ownerUnread                   // it could not be read: nothing is proven either way
)

// ownerGoing reads c's Cluster API owner (and its OpenStackCluster) from the API server, and reports whether it
// is being torn down (clusterapi.Teardown). An owner that is gone proves nothing (clusterctl move deletes it too)
// unless a step saw that very owner, by UID, being deleted (status.deorbit.ownerDeletionSeen): Cluster API
// removes a Cluster once its teardown is done, possibly between two steps.
func (r *Reconciler) ownerGoing(ctx context.Context, c *v1alpha1.VitalsCluster) (ownerState, string) {
	ref, ok := clusterapi.OwnerOf(c)
	if !ok {
		return ownerAbsent, "no Cluster API Cluster owns it"
	}
	key := client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}
	var cl clusterv1.Cluster
	switch err := r.d.APIReader.Get(ctx, key, &cl); {
	case apierrors.IsNotFound(err):
		if d := c.Status.Deorbit; d != nil && d.OwnerDeletionSeen != nil && d.OwnerDeletionSeen.UID == ref.UID {
			// Cluster API removed it once its teardown was done, between two of deorbit's steps.
			return ownerGoing, fmt.Sprintf("its owner Cluster %s (uid %s) was seen being deleted at %s and is gone now",
				key, ref.UID, d.OwnerDeletionSeen.Time.UTC().Format(time.RFC3339))
		}
		return ownerAbsent, fmt.Sprintf("its owner Cluster %s is gone without Vitals seeing it deleted (moved by clusterctl, or deleted while the operator was away)", key)
	case meta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err):
		return ownerAbsent, fmt.Sprintf("its owner Cluster %s cannot be read: Cluster API is not installed here", key)
	case err != nil:
		return ownerUnread, fmt.Sprintf("its owner Cluster %s could not be read: %v", key, err)
	case cl.UID != ref.UID:
		// Re-created under the same name: the new Cluster's volumes and load balancers carry the same names and
		// tags, and its servers may not be up yet. It proves nothing of this one's going.
		return ownerLives, fmt.Sprintf("its owner Cluster %s (uid %s) is gone, and the Cluster of that name now is another (uid %s): a re-created Cluster proves nothing, "+
			"its resources carry the same names. What would prove the teardown: the confirmation annotation", key, ref.UID, cl.UID)
	}
	var osc *infrav1.OpenStackCluster
	if clusterapi.IsOpenStack(&cl) {
		o := &infrav1.OpenStackCluster{}
		switch err := r.d.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: cl.Spec.InfrastructureRef.Name}, o); {
		case err == nil:
			osc = o
		case !apierrors.IsNotFound(err):
			return ownerUnread, fmt.Sprintf("the OpenStackCluster of its owner Cluster %s could not be read: %v", key, err)
		}
	}
	going, why := clusterapi.Teardown(&cl, osc)
	if going {
		return ownerGoing, why
	}
	return ownerLives, why
}

// serversGone reports whether the servers the cluster was seen to have while it lived (status.deorbit.seen.servers,
// recorded from its selector) are all gone or being deleted in the project, and none its selector matches now is
// up. A cluster never seen with a server proves nothing so: a selector that matches nothing it ever matched (a
// typo) would read as "servers gone" on a live cluster. A proof serves serversProofMaxAge.
func (r *Reconciler) serversGone(ctx context.Context, c *v1alpha1.VitalsCluster, cloud serverLister, project string) (bool, string) {
	var recorded []string
	if d := c.Status.Deorbit; d != nil && d.Seen != nil {
		recorded = d.Seen.Servers
	}
	if len(recorded) == 0 {
		if len(c.Spec.Controllers.Flight.Servers.Metadata) == 0 && c.Spec.OpenStack.NetworkID == "" {
			return false, "its servers cannot be told apart (no spec.openstack.networkID, no spec.controllers.flight.servers.metadata)"
		}
		return false, "no server of the cluster was ever seen matching its selector while it lived (status.deorbit.seen.servers is empty; " +
			"see its condition " + v1alpha1.ConditionServersSelected + "): servers never seen prove nothing by being gone, a selector with a typo matches none of a live cluster's. " +
			"What would prove it: the confirmation annotation, or its Cluster API owner's deletion"
	}
	if cloud == nil {
		return false, "its servers cannot be counted: the cloud is not verified"
	}
	if msg, ok := r.proven.get(c.UID, r.d.Clock.Now()); ok {
		return true, msg
	}
	m, err := matchServers(ctx, c, cloud, project)
	if err != nil {
		return false, fmt.Sprintf("its servers could not be counted: %v", err)
	}
	if m.listed == nil {
		// no selector any more: the record alone is read, from a list of the project's servers
		servers, err := cloud.ListServers(ctx, openstack.ListOpts{ProjectID: project})
		if err != nil {
			return false, fmt.Sprintf("its servers could not be counted: list servers: %v", err)
		}
		m.listed = map[string]openstack.Server{}
		for _, sv := range servers {
			m.listed[sv.ID] = sv
		}
	}
	up := append([]string(nil), m.up...)
	going := len(m.going)
	for _, id := range recorded {
		sv, ok := m.listed[id]
		switch {
		case !ok:
		case serverGoing(sv):
			if !slices.Contains(m.going, id) {
				going++
			}
		case !slices.Contains(up, id):
			up = append(up, id)
		}
	}
	if len(up) > 0 {
		slices.Sort(up)
		return false, fmt.Sprintf("%d of its servers (recorded while it lived, or %s) are up in project %s: %s", len(up), m.which, project, firstIDs(up))
	}
	msg := fmt.Sprintf("none of the %d servers the cluster was seen to have (status.deorbit.seen.servers) is up in project %s, nor any it matches now", len(recorded), project)
	if going > 0 {
		msg += fmt.Sprintf("; %d being deleted", going)
	}
	r.proven.set(c.UID, msg, r.d.Clock.Now().Add(serversProofMaxAge))
	return true, msg
}

// serverGoing: Nova deletes the server, or has.
func serverGoing(sv openstack.Server) bool {
	switch {
	case sv.TaskState == "deleting", strings.EqualFold(sv.Status, "DELETED"), strings.EqualFold(sv.Status, "SOFT_DELETED"),
		sv.VMState == "deleted", sv.VMState == "soft-delete":
		return true
	}
	return false
}

func firstIDs(ids []string) string {
	if len(ids) > maxNoteIDs {
		return strings.Join(ids[:maxNoteIDs], " ") + fmt.Sprintf(" and %d more", len(ids)-maxNoteIDs)
	}
	return strings.Join(ids, " ")
}

// notConfirmed is the CleanedUp message of a deleted cluster whose interlock does not hold: why, and exactly how
// to go on either way.
func notConfirmed(c *v1alpha1.VitalsCluster, p proof) string {
	return fmt.Sprintf("deletionPolicy is Deorbit, and nothing was deleted: the teardown waits until the cluster itself is proven going, and %s. "+
		"To tear the cluster's volumes, load balancers and routes down, confirm: kubectl -n %s annotate vitalscluster %s %s=%s "+
		"(or delete its Cluster API Cluster, or its servers). To keep them and let the VitalsCluster go: "+
		`kubectl -n %s patch vitalscluster %s --type merge -p '{"spec":{"deletionPolicy":"Orphan"}}'`,
		strings.Join(p.why, "; "), c.Namespace, c.Name, v1alpha1.AnnotationConfirmDeorbit, c.UID, c.Namespace, c.Name)
}

// provenCache keeps the proofs that a cluster's servers are gone for a while, by the cluster's UID.
type provenCache struct {
	mu sync.Mutex
	m  map[types.UID]provenEntry
}

type provenEntry struct {
	msg   string
	until time.Time
}

func (p *provenCache) get(uid types.UID, now time.Time) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[uid]
	if !ok || !now.Before(e.until) {
		delete(p.m, uid)
		return "", false
	}
	return e.msg, true
}

func (p *provenCache) set(uid types.UID, msg string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.UID]provenEntry{}
	}
	p.m[uid] = provenEntry{msg: msg, until: until}
}

func (p *provenCache) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, uid)
}

// ownerDeletionSeen is the record of c's owner seen being deleted at now: seen as it was if it names that owner
// already (the first sighting's time is kept), a new record otherwise.
func ownerDeletionSeen(c *v1alpha1.VitalsCluster, seen *v1alpha1.OwnerDeletionRecord, now time.Time) *v1alpha1.OwnerDeletionRecord {
	ref, ok := clusterapi.OwnerOf(c)
	if !ok {
		return seen
	}
	if seen != nil && seen.UID == ref.UID {
		return seen
	}
	return &v1alpha1.OwnerDeletionRecord{Name: ref.Name, UID: ref.UID, Time: metav1.NewTime(now)}
}

package clusterapi

import (
	"fmt"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Retry intervals of the answers to Cluster API's BeforeClusterDelete hook.
const (
	// RetryNotStarted: the VitalsCluster is not deleting yet (the enrolment deletes it once its Cluster is).
	RetryNotStarted = 5 * time.Second
	// RetryMin and RetryMax bound the wait until deorbit's next step.
	RetryMin = 2 * time.Second
	RetryMax = 30 * time.Second
)

// NotDeletedAfter bounds how long the BeforeClusterDelete hook waits for the deletion of a Cluster's own
// VitalsCluster (deletionPolicy Deorbit) once the Cluster is being deleted. The enrolment deletes it within
// seconds, whether the Cluster still opts in or not; one still not deleting after this will not be (no enrolment
// acts on it: the operator stopped, its writes refused), and the hook stops holding the Cluster's deletion.
const NotDeletedAfter = 10 * time.Minute

// ReasonNotDeleted is the reason of the condition ConditionCleanedUp (False) the hook puts on a Cluster whose
// VitalsCluster was not deleted within NotDeletedAfter of the Cluster's deletion.
const ReasonNotDeleted = "NotDeleted"

// Deleting is what the BeforeClusterDelete hook knows of the Cluster being deleted (from the request).
type Deleting struct {
	// Since is the Cluster's deletionTimestamp (zero: the request does not say).
	Since time.Time
	// Paused: spec.paused or cluster.x-k8s.io/paused (the enrolment deletes nothing of a paused Cluster; Cluster
	// API does not call the hook for one either).
	Paused bool
}

// MachineDeletionHook is the pre-terminate deletion hook (annotation) the enrolment keeps on every Machine of an
// enrolled Cluster (but those deleted while the Cluster lives) and, once the Cluster is torn down, on all of them
// until deorbit has released its VitalsCluster: Cluster API does not delete such a Machine's infrastructure while
// it is there, so the servers, and the workload API with them, stay up while
// deorbit deletes claims and Services, and CAPO, which tears the network down only after every Machine is gone,
// waits with it. A pre-drain hook would not do: Cluster API skips the drain, and its hook, of every Machine of a
// Cluster being deleted. Its value names the enrolment (MachineDeletionHookOwner).
const MachineDeletionHook = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/vitals-deorbit"

// MachineDeletionHookOwner is the value of MachineDeletionHook.
const MachineDeletionHookOwner = "vitals-enrol"

// HoldMachines reports whether the Machines of a Cluster (those not deleted while it lives, and all of them in a
// teardown) are held by MachineDeletionHook for its VitalsCluster vcl (nil: none): while vcl exists with
// deletionPolicy Deorbit and deorbit has neither finished nor given up. The hooks go as soon as that ends: a
// VitalsCluster gone, Orphan, Done or GaveUp.
func HoldMachines(vcl *v1alpha1.VitalsCluster) bool {
	if vcl == nil || vcl.Spec.Deletion() != v1alpha1.DeletionPolicyDeorbit {
		return false
	}
	if st := vcl.Status.Deorbit; st != nil && (st.Phase == v1alpha1.DeorbitPhaseDone || st.Phase == v1alpha1.DeorbitPhaseGaveUp) {
		return false
	}
	return true
}

// BeforeClusterDelete answers Cluster API's BeforeClusterDelete lifecycle hook for the Cluster cl whose
// VitalsCluster is vcl (nil: it has none, or it is gone): Success with RetryAfterSeconds while deorbit has not
// released the VitalsCluster, so that Cluster API deletes nothing of the cluster meanwhile (the workload API stays
// up while claims and Services are deleted), and Success without a retry when there is nothing to wait for.
// Deorbit that gave up lets the deletion go on: its debris report stays on the VitalsCluster's Events and on the
// Cluster's condition, and holding the deletion for ever would not clean it up. Nor does a VitalsCluster that is
// still not deleting NotDeletedAfter the Cluster's deletion hold it: nothing is going to delete it, and the
// answer says so; notDeleted is then true, for the caller to say it on the Cluster too. now is the clock's time.
func BeforeClusterDelete(vcl *v1alpha1.VitalsCluster, cl Deleting, now time.Time, resp *runtimehooksv1.BeforeClusterDeleteResponse) (notDeleted bool) {
	resp.Status = runtimehooksv1.ResponseStatusSuccess
	retry := func(d time.Duration, format string, args ...any) {
		resp.RetryAfterSeconds = int32((d + time.Second - 1) / time.Second) // not before the step is due
		resp.Message = fmt.Sprintf(format, args...)
	}
	if vcl == nil {
		resp.RetryAfterSeconds, resp.Message = 0, "no VitalsCluster: nothing for Vitals to clean up"
		return false
	}
	key := vcl.Namespace + "/" + vcl.Name
	if vcl.DeletionTimestamp.IsZero() {
		switch deadline := cl.Since.Add(NotDeletedAfter); {
		case cl.Paused:
			retry(RetryNotStarted, "VitalsCluster %s is not deleting yet: the Cluster is paused, the enrolment deletes it once the Cluster is not", key)
		case cl.Since.IsZero():
			retry(RetryNotStarted, "VitalsCluster %s is not deleting yet: deorbit has not started", key)
		case !now.Before(deadline):
			resp.RetryAfterSeconds = 0
			resp.Message = fmt.Sprintf("VitalsCluster %s is still not deleting %s after its Cluster's deletion (%s): nothing deletes it (is the operator running with --capi-enrol?). "+
				"The deletion goes on without waiting for deorbit; deorbit starts once garbage collection deletes the VitalsCluster with its Cluster, without the workload API",
				key, NotDeletedAfter, cl.Since.UTC().Format(time.RFC3339))
			return true
		default:
			retry(RetryNotStarted, "VitalsCluster %s is not deleting yet: deorbit has not started (the enrolment deletes it with its Cluster; the hook waits for that until %s)",
				key, deadline.UTC().Format(time.RFC3339))
		}
		return false
	}
	st := vcl.Status.Deorbit
	if st == nil || st.Phase == "" {
		retry(RetryNotStarted, "VitalsCluster %s is deleting: deorbit is starting", key)
		return false
	}
	switch st.Phase {
	case v1alpha1.DeorbitPhaseDone:
		resp.RetryAfterSeconds, resp.Message = 0, fmt.Sprintf("VitalsCluster %s: deorbit done, the cloud confirmed %d resources gone", key, st.Counts.Total)
		return false
	case v1alpha1.DeorbitPhaseGaveUp:
		resp.RetryAfterSeconds, resp.Message = 0, fmt.Sprintf("VitalsCluster %s: deorbit gave up with %d resources left (its debris report)", key, len(st.Debris))
		return false
	}
	wait := RetryMin
	if st.NextAttemptTime != nil {
		wait = st.NextAttemptTime.Sub(now)
	}
	wait = min(max(wait, RetryMin), RetryMax)
	retry(wait, "VitalsCluster %s: deorbit in phase %s, %d of %d resources done", key, st.Phase, st.Counts.Done, st.Counts.Total)
	return false
}

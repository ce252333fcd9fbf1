// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeorbitSpec configures deorbit: on deletion of the VitalsCluster, the cluster's volumes, load
// balancers and routes are deleted and the cloud is asked until it confirms, before the finalizer goes.
// Deorbit steps at its own deadlines (the cloud's pace), not at an interval.
type DeorbitSpec struct {
	// Enabled turns deorbit on for this cluster (default true). Off: the finalizer goes at once on deletion
	// and nothing is cleaned up.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// DryRun: plan the deletes and report them (status.deorbit.resources, state WouldDelete), delete
	// nothing, and hold the finalizer until the dry run ends or deorbit gives up.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Budget is the most deletes deorbit issues in one step (default 50).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5000
	Budget *int32 `json:"budget,omitempty"`
	// GiveUpAfter is how long after deletion began deorbit gives up (default 24h): it writes a debris
	// report of every cloud resource still there, and the finalizer goes.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be a duration of at least 1m, e.g. 24h"
	GiveUpAfter *metav1.Duration `json:"giveUpAfter,omitempty"`
	// UnreachableGracePeriod is how long the workload cluster may be unreachable before deorbit skips
	// its Kubernetes phases and goes on with the cloud (default 10m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration, e.g. 10m"
	UnreachableGracePeriod *metav1.Duration `json:"unreachableGracePeriod,omitempty"`
	// CloudWaitTimeout bounds how long deorbit waits for the cloud to confirm that the volumes and load
	// balancers whose claims and Services it deleted are gone (default 15m); what is left then is
	// deleted by the cloud-side sweep.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration, e.g. 15m"
	CloudWaitTimeout *metav1.Duration `json:"cloudWaitTimeout,omitempty"`
}

// Phases of deorbit, in order.
const (
	DeorbitPhaseSnapshots     = "VolumeSnapshots"
	DeorbitPhaseClaims        = "PersistentVolumeClaims"
	DeorbitPhaseServices      = "LoadBalancerServices"
	DeorbitPhaseRoutes        = "Routes"
	DeorbitPhaseWaitForCloud  = "WaitForCloud"
	DeorbitPhaseSweep         = "Sweep"
	DeorbitPhaseDone          = "Done"
	DeorbitPhaseGaveUp        = "GaveUp"
	DeorbitPhaseDryRunPlanned = "DryRunPlanned"
)

// Types of the resources deorbit deletes.
const (
	DeorbitVolumeSnapshot = "VolumeSnapshot"
	DeorbitClaim          = "PersistentVolumeClaim"
	DeorbitService        = "Service"
	DeorbitVolume         = "Volume"
	DeorbitLoadBalancer   = "LoadBalancer"
	DeorbitRoute          = "Route"
	// DeorbitPort is a Neutron port a load balancer of the cluster left (its Octavia VIP port).
	DeorbitPort = "Port"
	// DeorbitFloatingIP is a floating IP the cloud controller manager made for a Service of the cluster.
	DeorbitFloatingIP = "FloatingIP"
	// DeorbitCloud stands for the whole cloud in a debris report when it could not be checked.
	DeorbitCloud = "Cloud"
)

// States of a resource deorbit tracks.
const (
	// DeorbitPending: known, not yet deleted.
	DeorbitPending = "Pending"
	// DeorbitDeleting: the delete was accepted; the cloud (or Kubernetes) has not confirmed yet.
	DeorbitDeleting = "Deleting"
	// DeorbitGone: confirmed gone (404 from the cloud, or not found in Kubernetes).
	DeorbitGone = "Gone"
	// DeorbitKept: deliberately left: a volume of a PersistentVolume with reclaim policy Retain, or a
	// resource the remediation policy excludes.
	DeorbitKept = "Kept"
	// DeorbitUnproven: seen through the workload cluster but not proven the cluster's on the cloud side
	// (no CSI metadata, no cloud controller manager name): waited on, never deleted directly.
	DeorbitUnproven = "Unproven"
	// DeorbitWouldDelete: dry run.
	DeorbitWouldDelete = "WouldDelete"
)

// DeorbitResource is one resource deorbit deletes or waits on.
type DeorbitResource struct {
	// Type: VolumeSnapshot, PersistentVolumeClaim, Service (workload cluster); Volume, LoadBalancer,
	// Route, Port, FloatingIP (cloud); Cloud (debris only: nothing could be checked).
	Type string `json:"type"`
	// ID: the cloud ID; namespace/name in the workload cluster; destination@nexthop for a route.
	// +optional
	ID string `json:"id,omitempty"`
	// Name of the resource (the PersistentVolume of a volume, the cloud controller manager's name of a
	// load balancer, Octavia's name of a VIP port, the address of a floating IP).
	// +optional
	Name string `json:"name,omitempty"`
	// State: Pending, Deleting, Gone, Kept, Unproven, WouldDelete.
	// +optional
	State string `json:"state,omitempty"`
	// Status the cloud last reported (available, deleting, PENDING_DELETE, ERROR ...).
	// +optional
	Status string `json:"status,omitempty"`
	// Attempts of the delete so far.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// LastError of the last delete or read.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// NextAttempt is when a failed delete is tried again.
	// +optional
	NextAttempt *metav1.Time `json:"nextAttempt,omitempty"`
}

// MaxDeorbitResources is the most entries deorbit writes in status.deorbit.resources, debris and notProven each
// (below the CRD's MaxItems of 5000): a few hundred bytes each, so that the VitalsCluster stays well within the
// API server's and etcd's limits on an object (about 1.5 MiB) with the rest of its status.
const MaxDeorbitResources = 2000

// DeorbitOmitted counts the tracked resources status.deorbit.resources leaves out (MaxDeorbitResources).
type DeorbitOmitted struct {
	// Done are resources gone or kept, dropped from the list for good (gone first, then kept), and counted in
	// counts.done.
	// +optional
	Done int32 `json:"done,omitempty"`
	// Remaining are resources still to delete or confirm that did not fit at the last step, with those whose
	// delete failed and the others remaining filling the list; counted in counts.remaining. The next step's
	// reads of the cloud and the workload cluster find them again.
	// +optional
	Remaining int32 `json:"remaining,omitempty"`
}

// DeorbitCounts count the tracked resources: done are those gone or kept, and the Kubernetes objects
// whose delete was accepted.
type DeorbitCounts struct {
	Total     int32 `json:"total"`
	Done      int32 `json:"done"`
	Remaining int32 `json:"remaining"`
}

// DeorbitStatus records deorbit's progress so that a restarted operator resumes where it was.
type DeorbitStatus struct {
	ControllerStatus `json:",inline"`
	// Phase deorbit is in: VolumeSnapshots, PersistentVolumeClaims, LoadBalancerServices, Routes,
	// WaitForCloud, Sweep, Done, GaveUp, DryRunPlanned.
	// +optional
	Phase string `json:"phase,omitempty"`
	// StartTime is when deorbit began (the give-up clock starts here).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// PhaseStartTime is when the current phase began.
	// +optional
	PhaseStartTime *metav1.Time `json:"phaseStartTime,omitempty"`
	// UnreachableSince is when the workload cluster was first seen unreachable in a row.
	// +optional
	UnreachableSince *metav1.Time `json:"unreachableSince,omitempty"`
	// WorkloadSkipped says why the Kubernetes phases were skipped, if they were.
	// +optional
	WorkloadSkipped string `json:"workloadSkipped,omitempty"`
	// NextAttemptTime is when deorbit looks again.
	// +optional
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`
	// CompletionTime is when the finalizer was released.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Interlock is what proved, at the last step, that the cluster itself is going (deletionPolicy
	// Deorbit acts only then): its owner being deleted, its servers gone, or the confirmation annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Interlock string `json:"interlock,omitempty"`
	// LastError of the last step, empty when it succeeded.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// Counts of the tracked resources.
	// +optional
	Counts DeorbitCounts `json:"counts,omitempty"`
	// Resources deorbit deletes or waits on, on both sides: at most MaxDeorbitResources entries, the most
	// important kept (those whose delete failed or that wait with a reason, then the others remaining, then the kept
	// ones, then those gone); resourcesOmitted counts the others.
	// +optional
	// +kubebuilder:validation:MaxItems=5000
	Resources []DeorbitResource `json:"resources,omitempty"`
	// ResourcesOmitted counts the tracked resources that status.deorbit.resources leaves out to stay within its cap
	// (counts include them). Nil: none.
	// +optional
	ResourcesOmitted *DeorbitOmitted `json:"resourcesOmitted,omitempty"`
	// Debris is every cloud resource still there when deorbit gave up.
	// +optional
	// +kubebuilder:validation:MaxItems=5000
	Debris []DeorbitResource `json:"debris,omitempty"`
	// NotProven is, when deorbit gave up, every resource the workload cluster named but that was never proven
	// the cluster's on the cloud side (another cluster's load balancer or volume, say): deorbit never touched
	// it, it is not debris (not in status.deorbit.debris, the debris metric or its alert), and nobody should
	// delete it for this cluster's sake.
	// +optional
	// +kubebuilder:validation:MaxItems=5000
	NotProven []DeorbitResource `json:"notProven,omitempty"`
	// Seen is what deorbit recorded of the cluster while it lived, for its teardown to read when neither
	// the servers' selector nor the workload cluster's API tells any more.
	// +optional
	Seen *DeorbitSeen `json:"seen,omitempty"`
	// OwnerDeletionSeen records the Cluster API owner a step saw being torn down. Cluster API removes a Cluster
	// once its teardown is done, possibly in the middle of deorbit's steps: its absence then still proves the
	// teardown, for the owner of this UID only (a Cluster gone without Vitals seeing it deleted proves nothing).
	// +optional
	OwnerDeletionSeen *OwnerDeletionRecord `json:"ownerDeletionSeen,omitempty"`
}

// OwnerDeletionRecord is a Cluster API owner deorbit saw being deleted.
type OwnerDeletionRecord struct {
	// Name of the Cluster, in the VitalsCluster's namespace.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// UID of the Cluster seen being deleted.
	UID types.UID `json:"uid"`
	// Time the deletion was first seen.
	Time metav1.Time `json:"time"`
}

// DeorbitSeen is what deorbit records of a live cluster whose deletionPolicy is Deorbit, at most every few
// minutes: the servers its selector matched (the servers-gone interlock proves a teardown only by these being
// gone) and the keep ledger (what the workload cluster said to keep, which the sweep never deletes even when the
// workload API is gone by the teardown).
type DeorbitSeen struct {
	// Servers are the IDs of the servers spec.controllers.flight.servers.metadata (or, without it, a port on
	// spec.openstack.networkID) matched the last time it matched any (sorted). A selector that matches none
	// leaves the earlier record.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Servers []string `json:"servers,omitempty"`
	// ServersTime is when Servers was recorded.
	// +optional
	ServersTime *metav1.Time `json:"serversTime,omitempty"`
	// Keep is the keep ledger: the Cinder volumes of PersistentVolumes with reclaim policy Retain, of
	// PersistentVolumes or claims marked vitals.vitalsproject.io/keep, and the Cinder snapshots of
	// VolumeSnapshots marked so (or of such claims), as the workload cluster last showed them.
	// +optional
	// +kubebuilder:validation:MaxItems=5000
	Keep []DeorbitKeepEntry `json:"keep,omitempty"`
	// KeepTime is when the workload cluster was last read for the ledger (nil: never reachable).
	// +optional
	KeepTime *metav1.Time `json:"keepTime,omitempty"`
	// LastRecordTime is when the cluster was last looked at for this record.
	// +optional
	LastRecordTime *metav1.Time `json:"lastRecordTime,omitempty"`
}

// DeorbitKeepEntry is one entry of the keep ledger.
type DeorbitKeepEntry struct {
	// Type: Volume or Snapshot.
	Type string `json:"type"`
	// ID is the Cinder ID.
	ID string `json:"id"`
	// Name is the PersistentVolume or the VolumeSnapshot (namespace/name) that keeps it.
	// +optional
	Name string `json:"name,omitempty"`
	// Why it is kept.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Why string `json:"why,omitempty"`
}

// DeorbitSnapshot is a Cinder snapshot in the keep ledger.
const DeorbitSnapshot = "Snapshot"

// ConditionServersSelected: while the cluster lives with deletionPolicy Deorbit, whether its servers' selector
// (spec.controllers.flight.servers.metadata, else spec.openstack.networkID) matches any server of its project
// (reasons: Matched, NoServerMatched, NoSelector, CloudUnverified, ServersUnread). False: the servers-gone
// interlock can never prove the cluster's teardown, and a typo in the selector is likely.
const ConditionServersSelected = "ServersSelected"

// ConditionCleanedUp: deorbit's progress after deletion (reasons: InProgress, WorkloadUnreachable,
// CloudUnverified, DryRun, GaveUp, CleanedUp, Disabled, LocalCluster, Orphaned, NotConfirmed).
const ConditionCleanedUp = "CleanedUp"

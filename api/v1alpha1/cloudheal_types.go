// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CloudHealSpec configures the repairs of the cloud resources the cluster's own controllers made (the
// cloud controller manager's, Cinder CSI's), on a running cluster.
type CloudHealSpec struct {
	ControllerSpec `json:",inline"`
	// Repairs turn each of cloudheal's repairs on or off and tune it.
	// +optional
	Repairs CloudHealRepairs `json:"repairs,omitempty"`
}

// CloudHealRepairs are cloudheal's repairs.
type CloudHealRepairs struct {
	// StaleAttachments frees the cluster's volumes held by an attachment to a server that is gone.
	// +optional
	StaleAttachments StaleAttachmentRepair `json:"staleAttachments,omitempty"`
	// LoadBalancerSecurityGroups restores the rules the cloud controller manager's load-balancer security
	// groups are missing.
	// +optional
	LoadBalancerSecurityGroups LBSecurityGroupRepair `json:"loadBalancerSecurityGroups,omitempty"`
	// LoadBalancers reports the cloud controller manager's load balancers that do not converge.
	// +optional
	LoadBalancers LBConvergenceRepair `json:"loadBalancers,omitempty"`
	// Debris removes what the cloud controller manager left behind on a running cluster (off by default):
	// turn it on with spec.remediation.dryRun first.
	// +optional
	Debris DebrisRepair `json:"debris,omitempty"`
}

// DebrisRepair removes the live cluster's debris, each object only once two passes at least one interval
// apart saw it so and its first sighting is ProofAge old: a load balancer the cluster owns (named or tagged
// kube_service_<clusterName>_<namespace>_<service>, its VIP on spec.openstack.subnetID) whose Service is
// gone or no longer of type LoadBalancer, with its VIP port and the cloud controller manager's floating IP
// on that port; a VIP port whose load balancer is gone; and a port on the cluster's network owned by a
// compute: device that names no server of the project. Never a user's floating IP (any other
// description), nor an unattached floating IP of the cloud controller manager's (kept on purpose with
// loadbalancer.openstack.org/keep-floatingip: reported only), nor a load balancer a live Service names or
// serves, nor one PENDING_*. Each delete is a destructive removal asked of the remediation policy.
type DebrisRepair struct {
	// Enabled turns the repair on (default false: off).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// ProofAge is how old an object's first sighting as debris must be before it is removed (default 1h;
	// at least 10m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m')",message="must be a duration of at least 10m, e.g. 1h"
	ProofAge *metav1.Duration `json:"proofAge,omitempty"`
}

// DefaultDebrisProofAge is spec.controllers.cloudheal.repairs.debris.proofAge's default; MinDebrisProofAge
// its least.
const (
	DefaultDebrisProofAge = time.Hour
	MinDebrisProofAge     = 10 * time.Minute
)

// IsEnabled reports whether the repair is on (default off).
func (r DebrisRepair) IsEnabled() bool { return r.Enabled != nil && *r.Enabled }

// ProofAgeOrDefault is r's proof age (default DefaultDebrisProofAge).
func (r *DebrisRepair) ProofAgeOrDefault() time.Duration {
	if r.ProofAge != nil && r.ProofAge.Duration > 0 {
		return r.ProofAge.Duration
	}
	return DefaultDebrisProofAge
}

// DebrisKind is the kind of a debris object.
// +kubebuilder:validation:Enum=LoadBalancer;FloatingIP;Port
type DebrisKind string

// The kinds of debris.
const (
	DebrisLoadBalancer DebrisKind = "LoadBalancer"
	DebrisFloatingIP   DebrisKind = "FloatingIP"
	DebrisPort         DebrisKind = "Port"
)

// MaxDebris is how many debris objects status.cloudheal.debris keeps; more are counted
// (debrisCount) and judged again from the next pass's read.
const MaxDebris = 50

// Debris is an object seen as the live cluster's debris, from its first sighting.
type Debris struct {
	// Kind of the object.
	Kind DebrisKind `json:"kind"`
	// ID of the object.
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// Name of the object (a floating IP's address).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name,omitempty"`
	// Service is the namespace/name of the Service it was made for, where known.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	Service string `json:"service,omitempty"`
	// Why it is debris.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Why string `json:"why,omitempty"`
	// FirstSeen is when a pass first saw it as debris; LastSeen the last pass that did.
	FirstSeen metav1.Time `json:"firstSeen"`
	LastSeen  metav1.Time `json:"lastSeen"`
	// Passes counts the passes in a row that saw it so, up to 2 (the proof needs two).
	// +kubebuilder:validation:Maximum=2
	Passes int32 `json:"passes"`
	// Revision is a port's revision_number when it was last seen (the delete needs the same).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Reported: the Warning Event of a floating IP that is reported only was sent for this sighting.
	// +optional
	Reported bool `json:"reported,omitempty"`
}

// LBConvergenceRepair watches the load balancer of each LoadBalancer Service (the cloud controller
// manager's: the Service's loadbalancer.openstack.org/load-balancer-id annotation, else its name
// kube_service_<clusterName>_<namespace>_<name>, with its VIP on spec.openstack.subnetID when set): one whose
// provisioning status stays PENDING_* or ERROR, or whose operating status is ERROR or DEGRADED while every
// Node is Ready, for Timeout, turns LoadBalancersConverged False, with a Warning Event on the Service in the
// workload cluster that names what only an administrator can do, and the exact command.
type LBConvergenceRepair struct {
	RepairSpec `json:",inline"`
	// Timeout is how long a load balancer may stay so before it is reported (default 10m; at least 1m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be a duration of at least 1m, e.g. 10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// DefaultLBConvergenceTimeout is spec.controllers.cloudheal.repairs.loadBalancers.timeout's default.
const DefaultLBConvergenceTimeout = 10 * time.Minute

// TimeoutOrDefault is r's timeout (default DefaultLBConvergenceTimeout).
func (r *LBConvergenceRepair) TimeoutOrDefault() time.Duration {
	if r.Timeout != nil && r.Timeout.Duration > 0 {
		return r.Timeout.Duration
	}
	return DefaultLBConvergenceTimeout
}

// StuckLoadBalancer is a load balancer seen not converging, from its first sighting.
type StuckLoadBalancer struct {
	// ID of the load balancer.
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// Service is the LoadBalancer Service's namespace/name.
	// +kubebuilder:validation:MaxLength=317
	Service string `json:"service"`
	// FirstSeen is when a pass first saw it not converging.
	FirstSeen metav1.Time `json:"firstSeen"`
	// Reported: the Service's Warning Event was sent for this sighting.
	// +optional
	Reported bool `json:"reported,omitempty"`
}

// LBSourceRanges says where the cloud controller manager lets a load balancer's traffic to the node ports
// come from.
// +kubebuilder:validation:Enum=Subnet;Service
type LBSourceRanges string

const (
	// LBSourceRangesSubnet: from the member subnet's CIDR (spec.openstack.subnetID), as the cloud
	// controller manager opens it for the amphora provider (the amphorae forward from that subnet).
	LBSourceRangesSubnet LBSourceRanges = "Subnet"
	// LBSourceRangesService: from the Service's loadBalancerSourceRanges (default 0.0.0.0/0), as the cloud
	// controller manager opens it for the ovn provider (which keeps the clients' addresses).
	LBSourceRangesService LBSourceRanges = "Service"
)

// LBSecurityGroupRepair checks, where the OpenStack cloud controller manager manages security groups for
// load balancers ([LoadBalancer] manage-security-groups), each LoadBalancer Service's group (named
// lb-sg-<uid>-<namespace>-<name>, described as the cloud controller manager describes it, for
// spec.openstack.clusterName) against the rules the Service needs: ingress to each node port (and the health
// check node port) from the source ranges. A missing rule is created again, a safe action; a rule beyond them
// is reported, never deleted; a group of that name with another description is not the cloud controller
// manager's and is never written.
type LBSecurityGroupRepair struct {
	RepairSpec `json:",inline"`
	// SourceRanges: Subnet (default; the amphora provider) or Service (the ovn provider), as the cloud
	// controller manager's lb-provider.
	// +optional
	SourceRanges LBSourceRanges `json:"sourceRanges,omitempty"`
}

// StaleAttachmentRepair frees a volume of the cluster (Cinder CSI's cluster metadata, in the cluster's
// project) whose attachment names a server that is gone: seen so in two passes at least one interval
// apart and for Timeout, the attachment is removed through Cinder's attachment API, a disruptive action
// asked of the remediation policy. An attachment to a server a Ready Node names is never touched.
type StaleAttachmentRepair struct {
	RepairSpec `json:",inline"`
	// Timeout is how long an attachment must have been seen stale before it is removed (default 10m; at
	// least 1m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be a duration of at least 1m, e.g. 10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// DefaultStaleAttachmentTimeout is spec.controllers.cloudheal.repairs.staleAttachments.timeout's default.
const DefaultStaleAttachmentTimeout = 10 * time.Minute

// TimeoutOrDefault is r's timeout (default DefaultStaleAttachmentTimeout).
func (r *StaleAttachmentRepair) TimeoutOrDefault() time.Duration {
	if r.Timeout != nil && r.Timeout.Duration > 0 {
		return r.Timeout.Duration
	}
	return DefaultStaleAttachmentTimeout
}

// Condition types of cloudheal.
const (
	// ConditionVolumeAttachmentsHealthy: no volume of the cluster is held by an attachment to a server
	// that is gone (reasons: NoStaleAttachments, StaleAttachments, DetachFailed, Disabled).
	ConditionVolumeAttachmentsHealthy = "VolumeAttachmentsHealthy"
	// ConditionLBSecurityGroupsHealthy: every LoadBalancer Service's group the cloud controller manager made
	// holds the rules the Service needs (reasons: RulesPresent, RulesMissing, RulesDrifted, RuleCreateFailed,
	// NoManagedGroups, Disabled).
	ConditionLBSecurityGroupsHealthy = "LoadBalancerSecurityGroupsHealthy"
	// ConditionLoadBalancersConverged: no load balancer of the cluster's Services has stayed PENDING_* or
	// ERROR (or ERROR/DEGRADED while every Node is Ready) past its timeout (reasons: Converged, NotConverged,
	// Disabled).
	ConditionLoadBalancersConverged = "LoadBalancersConverged"
	// ConditionLiveDebrisCleared: no load balancer, VIP port, floating IP or server-less port the live cluster left
	// behind is seen (reasons: NoDebris, DebrisFound, DebrisRemoveFailed, Disabled).
	ConditionLiveDebrisCleared = "LiveDebrisCleared"
)

// StaleAttachment is an attachment seen stale; it is removed only once seen so in two passes at least
// one interval apart, and for the repair's timeout. Kept in the status so that the proof survives
// operator restarts.
type StaleAttachment struct {
	// AttachmentID is Cinder's attachment.
	// +kubebuilder:validation:MaxLength=64
	AttachmentID string `json:"attachmentID"`
	// VolumeID is the attachment's volume.
	// +kubebuilder:validation:MaxLength=64
	VolumeID string `json:"volumeID"`
	// ServerID is the server the attachment names.
	// +kubebuilder:validation:MaxLength=64
	ServerID string `json:"serverID"`
	// FirstSeen is when a pass first saw the attachment stale.
	FirstSeen metav1.Time `json:"firstSeen"`
	// Passes counts the passes in a row that saw it stale, up to 2 (the proof needs two).
	// +kubebuilder:validation:Maximum=2
	Passes int32 `json:"passes"`
}

// CloudHealStatus reports cloudheal.
type CloudHealStatus struct {
	ControllerStatus `json:",inline"`
	// StaleAttachments are the attachments seen stale, awaiting their proof or held back.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	StaleAttachments []StaleAttachment `json:"staleAttachments,omitempty"`
	// DetachedTotal counts every stale attachment removed for this cluster.
	// +optional
	DetachedTotal int64 `json:"detachedTotal,omitempty"`
	// StuckLoadBalancers are the load balancers seen not converging.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	StuckLoadBalancers []StuckLoadBalancer `json:"stuckLoadBalancers,omitempty"`
	// RulesRestoredTotal counts every rule restored to a load balancer's security group for this cluster.
	// +optional
	RulesRestoredTotal int64 `json:"rulesRestoredTotal,omitempty"`
	// Debris are the objects seen as the live cluster's debris (at most MaxDebris, 50).
	// +optional
	// +kubebuilder:validation:MaxItems=50
	Debris []Debris `json:"debris,omitempty"`
	// DebrisCount is how many objects the last pass saw as debris (also beyond the list's 50).
	// +optional
	DebrisCount int32 `json:"debrisCount,omitempty"`
	// DebrisRemovedTotal counts every debris object removed for this cluster.
	// +optional
	DebrisRemovedTotal int64 `json:"debrisRemovedTotal,omitempty"`
}

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
}

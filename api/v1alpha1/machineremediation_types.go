// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerRemediate is the name of the controller that carries out VitalsRemediations (Cluster API's external
// remediation of a Machine): its Events, metrics and field manager (vitals-remediate).
const ControllerRemediate = "remediate"

// FinalizerUncordon is set on a VitalsRemediation before it cordons the Machine's Node, and removed once the
// Node is uncordoned (or is gone): a remediation deleted by its MachineHealthCheck once the Machine is healthy
// again never leaves the Node cordoned.
const FinalizerUncordon = "vitals.vitalsproject.io/uncordon"

// Defaults of a VitalsRemediation's steps.
const (
	DefaultMachineSoftRebootTimeout = 5 * 60 // seconds
	DefaultMachineHardRebootTimeout = 10 * 60
)

// VitalsRemediationSpec says how a Machine's server is remediated: a soft reboot through Nova, a hard reboot
// when the Machine is not healthy again softRebootTimeout later, and, when it is still not healthy
// hardRebootTimeout after that, the Machine is handed back to the MachineSet or control plane that controls it
// (its OwnerRemediated condition False), which replaces it; with no such owner the remediation stops and says
// so. Vitals never deletes the server.
type VitalsRemediationSpec struct {
	// SoftRebootTimeout is how long after the soft reboot the Machine must be healthy again (its
	// MachineHealthCheck's HealthCheckSucceeded condition True), else the server is rebooted hard (default 5m).
	// +optional
	SoftRebootTimeout *metav1.Duration `json:"softRebootTimeout,omitempty"`
	// HardRebootTimeout is how long after the hard reboot the Machine must be healthy again, else the
	// remediation stops (default 10m).
	// +optional
	HardRebootTimeout *metav1.Duration `json:"hardRebootTimeout,omitempty"`
	// VitalsCluster names the VitalsCluster (in the Machine's namespace) whose credentials prove the server the
	// cluster's and whose remediation policy decides each step; empty: the one named like the Machine's Cluster
	// (spec.clusterName), as Cluster API enrolment makes it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	VitalsCluster string `json:"vitalsCluster,omitempty"`
}

// SoftReboot is spec.softRebootTimeout or its default.
func (s *VitalsRemediationSpec) SoftReboot() metav1.Duration {
	if s.SoftRebootTimeout != nil {
		return *s.SoftRebootTimeout
	}
	return metav1.Duration{Duration: DefaultMachineSoftRebootTimeout * 1e9}
}

// HardReboot is spec.hardRebootTimeout or its default.
func (s *VitalsRemediationSpec) HardReboot() metav1.Duration {
	if s.HardRebootTimeout != nil {
		return *s.HardRebootTimeout
	}
	return metav1.Duration{Duration: DefaultMachineHardRebootTimeout * 1e9}
}

// RemediationPhase is where a VitalsRemediation is.
// +kubebuilder:validation:Enum=Pending;Draining;DrainTimedOut;SoftRebootStarted;SoftRebooted;HardRebootStarted;HardRebooted;Succeeded;Stopped
type RemediationPhase string

const (
	// RemediationPending: no step taken yet (the first one is held, failed or not asked yet).
	RemediationPending RemediationPhase = "Pending"
	// RemediationDraining: the Machine's Node is cordoned and its pods are being evicted (PodDisruptionBudgets
	// honoured) before the reboot status.drain.step; the reboot follows the drain. It counts as a step in flight
	// of the Machine's pool.
	RemediationDraining RemediationPhase = "Draining"
	// RemediationDrainTimedOut: the drain before status.drain.step did not finish within the cluster's drain
	// timeout (spec.flight.repairs.nodes.drain) on a reachable Node: no PodDisruptionBudget is overridden, the
	// reboot is not taken, the Node was uncordoned, the pool is free, and the drain is tried again from
	// status.drain.retryAfter (perServer.cooldown later).
	RemediationDrainTimedOut RemediationPhase = "DrainTimedOut"
	// RemediationSoftRebootStarted: the soft reboot was recorded as started, before its Nova call (written
	// ahead: an operator stopped before or after the call finds it so); it counts as taken at lastStepTime,
	// so it is never sent again within softRebootTimeout.
	RemediationSoftRebootStarted RemediationPhase = "SoftRebootStarted"
	// RemediationHardRebootStarted: the hard reboot was recorded as started, before its Nova call; it counts as
	// taken at lastStepTime.
	RemediationHardRebootStarted RemediationPhase = "HardRebootStarted"
	// RemediationSoftRebooted: the server was rebooted soft; waiting softRebootTimeout for the Machine.
	RemediationSoftRebooted RemediationPhase = "SoftRebooted"
	// RemediationHardRebooted: the server was rebooted hard; waiting hardRebootTimeout for the Machine.
	RemediationHardRebooted RemediationPhase = "HardRebooted"
	// RemediationSucceeded: the Machine is healthy again after a reboot (its MachineHealthCheck deletes the
	// remediation).
	RemediationSucceeded RemediationPhase = "Succeeded"
	// RemediationStopped: nothing more is done (status.reason says why: the hard reboot did not bring the node
	// back, the server is not the cluster's, the Machine has no server); the Machine is replaced by Cluster API
	// or the operator.
	RemediationStopped RemediationPhase = "Stopped"
)

// VitalsRemediationStatus is what the remediation did.
type VitalsRemediationStatus struct {
	// ObservedGeneration is the generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase of the remediation.
	// +optional
	Phase RemediationPhase `json:"phase,omitempty"`
	// Reason in CamelCase for the phase or the last hold (e.g. Rebooted, Paused, ForeignServer, HandedBack,
	// NoRecovery).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
	// Message for humans.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
	// Server is the Nova server of the Machine (from its spec.providerID).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Server string `json:"server,omitempty"`
	// LastStepTime is when the last step (reboot) was taken.
	// +optional
	LastStepTime *metav1.Time `json:"lastStepTime,omitempty"`
	// RebootsBefore is how many reboots Nova's instance-action log of the server held when the last step was
	// recorded as started (phase *RebootStarted): an operator that finds the step started and not known as
	// taken (it stopped between the record and the answer) reads the log again; one more reboot means it was
	// sent, none means it never left, and it is sent then (once).
	// +optional
	// +kubebuilder:validation:Minimum=0
	RebootsBefore *int32 `json:"rebootsBefore,omitempty"`
	// Node is the Machine's Node the remediation cordoned and drained (status.nodeRef of the Machine then).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
	// Cordoned is true while Vitals holds status.node cordoned: recorded before the cordon, it uncordons the Node
	// when the Machine is healthy again or the remediation is deleted (its finalizer
	// vitals.vitalsproject.io/uncordon), never a Node someone else cordoned.
	// +optional
	Cordoned bool `json:"cordoned,omitempty"`
	// Drain is the drain before the current or last reboot.
	// +optional
	Drain *RemediationDrain `json:"drain,omitempty"`
	// Actions are the remediation's steps taken, held back or failed, newest last (at most MaxActions).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Actions []Action `json:"actions,omitempty"`
}

// RemediationDrain is the drain of a Machine's Node before a reboot.
type RemediationDrain struct {
	// Step is the reboot the drain precedes: soft or hard.
	// +kubebuilder:validation:Enum=soft;hard
	Step string `json:"step"`
	// Started is when the Node was cordoned for it (the drain's timeout runs from here).
	// +optional
	Started *metav1.Time `json:"started,omitempty"`
	// Left are the pods still to go after the last round ("namespace/name", with the PodDisruptionBudgets that
	// hold them once the drain timed out), at most 20.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=600
	Left []string `json:"left,omitempty"`
	// RetryAfter is when a drain that timed out is tried again.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
}

// VitalsRemediation is Cluster API's external remediation of one Machine by Vitals: a MachineHealthCheck whose
// remediation template is a VitalsRemediationTemplate creates it for an unhealthy Machine (named like the
// Machine, owned by it), and deletes it when the Machine is healthy again. Vitals reboots the Machine's server
// through Nova, soft then hard, each step asked of the cluster's remediation policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=vitals,path=vitalsremediations,singular=vitalsremediation
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.status.server`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`,priority=1
// +kubebuilder:printcolumn:name="Last-Step",type=date,JSONPath=`.status.lastStepTime`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.vitalsCluster`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VitalsRemediation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VitalsRemediationSpec   `json:"spec,omitempty"`
	Status VitalsRemediationStatus `json:"status,omitempty"`
}

// VitalsRemediationList is a list of VitalsRemediations.
//
// +kubebuilder:object:root=true
type VitalsRemediationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VitalsRemediation `json:"items"`
}

// VitalsRemediationTemplateResource is what a VitalsRemediation is made from.
type VitalsRemediationTemplateResource struct {
	// Spec of the VitalsRemediations made from the template.
	Spec VitalsRemediationSpec `json:"spec"`
}

// VitalsRemediationTemplateSpec holds the template.
type VitalsRemediationTemplateSpec struct {
	// Template of the VitalsRemediations (Cluster API copies its spec into each).
	Template VitalsRemediationTemplateResource `json:"template"`
}

// VitalsRemediationTemplate is what a MachineHealthCheck names as its remediation template
// (spec.remediation.templateRef in cluster.x-k8s.io/v1beta2, spec.remediationTemplate in v1beta1), in its
// namespace: Cluster API makes a VitalsRemediation of it for each Machine that fails the health check.
// clusterctl move discovers both kinds (label clusterctl.cluster.x-k8s.io on their CRDs): a VitalsRemediation
// moves with the Machine that owns it; a template, owned by nothing, moves because its CRD carries
// clusterctl.cluster.x-k8s.io/move, so that a moved MachineHealthCheck still finds it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=vitals,path=vitalsremediationtemplates,singular=vitalsremediationtemplate
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
type VitalsRemediationTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VitalsRemediationTemplateSpec `json:"spec,omitempty"`
}

// VitalsRemediationTemplateList is a list of VitalsRemediationTemplates.
//
// +kubebuilder:object:root=true
type VitalsRemediationTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VitalsRemediationTemplate `json:"items"`
}

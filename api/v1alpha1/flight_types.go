// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FlightSpec configures flight: the repairs that keep the cluster's nodes and networking healthy.
// Every repair detects and reports; every change it makes asks the remediation policy first.
type FlightSpec struct {
	ControllerSpec `json:",inline"`
	// Servers says which servers of the cluster's project are the cluster's.
	// +optional
	Servers FlightServers `json:"servers,omitempty"`
	// MaxRoutes is the router's route limit (Neutron's max_routes, default 30): the RouteHeadroom
	// condition turns False at 80 % of it, and flight never adds a route beyond it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxRoutes *int32 `json:"maxRoutes,omitempty"`
	// Repairs turn each repair on or off and tune it.
	// +optional
	Repairs FlightRepairs `json:"repairs,omitempty"`
}

// FlightServers says which servers are the cluster's. A server is only ever the cluster's when the
// cluster's own credentials list it in the cluster's project; within the project it must also carry
// every Metadata pair or, when no Metadata is given, have a port on spec.openstack.networkID. A Node's
// providerID (openstack:///<server id>) never adds a server these rules do not match.
type FlightServers struct {
	// Metadata pairs every server of the cluster carries (Nova server metadata), e.g.
	// {"vitals.vitalsproject.io/cluster": "prod-eu1"}. Empty: servers with a port on
	// spec.openstack.networkID are the cluster's. With neither set, every server a Node's providerID
	// names is the cluster's: whoever can create or update Nodes in the workload cluster (its kubelets,
	// anyone granted that) then chooses which servers of the project flight may reboot or delete. Set
	// one when clusters share a project.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RepairSpec turns one repair on or off.
type RepairSpec struct {
	// Enabled turns the repair on (default true). Off: the repair neither detects nor acts, and its
	// condition says Disabled.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// NodeRepair repairs the cluster's unhealthy nodes, rebooting first and replacing last: a node whose
// Node has held one of UnhealthyConditions for its timeout, or an ACTIVE server no Node names
// NodeStartupTimeout after its creation, is cordoned and drained (Eviction API, PodDisruptionBudgets
// honoured), then soft-rebooted; a hard reboot follows after SoftRebootTimeout, and a delete after
// HardRebootTimeout only for a server whose manager replaces it (Replacement). A server whose Node is a
// Cluster API Machine's, or that Gardener or Magnum manages, is never rebooted or deleted behind its manager.
type NodeRepair struct {
	RepairSpec `json:",inline"`
	// UnhealthyConditions: a Node is unhealthy once one of its conditions has had the given status for at
	// least the timeout, measured from the condition's lastTransitionTime (a node NotReady for a minute
	// after months of service is not touched). Any condition type counts: kubelet's (Ready), the node
	// problem detector's (KernelDeadlock, ReadonlyFilesystem, ...), the Vitals agent's (PodNetworkHealthy).
	// Default: Ready False or Unknown for 5m.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +listMapKey=status
	// +kubebuilder:validation:MaxItems=32
	UnhealthyConditions []UnhealthyCondition `json:"unhealthyConditions,omitempty"`
	// NodeStartupTimeout: an ACTIVE server of the cluster that no Node names this long after the server
	// was created never registered (default 15m); a server whose Node exists but was never Ready is judged
	// by UnhealthyConditions.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be a duration of at least 1m, e.g. 15m"
	NodeStartupTimeout *metav1.Duration `json:"nodeStartupTimeout,omitempty"`
	// NodeSelector limits the repair to the Nodes it matches (default: every Node). Servers that never
	// registered have no labels: NodeStartupTimeout judges them all. A Node labelled
	// vitals.vitalsproject.io/exclude-from-remediation: "true" (or a server with that metadata) is never
	// touched, whatever the selector.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// NodePoolLabel is the label key that names a Node's pool (e.g. worker.gardener.cloud/pool,
	// magnum.openstack.org/nodegroup, cluster.x-k8s.io/deployment-name); a server that never registered
	// is placed by its Nova metadata of the same key. At most one disruptive step is in flight per pool.
	// Empty (the default): the cluster's workers are one pool, repaired one node at a time.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	NodePoolLabel string `json:"nodePoolLabel,omitempty"`
	// Drain tunes the drain before a reboot or a delete.
	// +optional
	Drain *NodeDrain `json:"drain,omitempty"`
	// SoftRebootTimeout: how long after a soft reboot the node may take to become healthy before a hard
	// reboot (default 5m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be a duration of at least 1m, e.g. 5m"
	SoftRebootTimeout *metav1.Duration `json:"softRebootTimeout,omitempty"`
	// HardRebootTimeout: how long after a hard reboot the node may take to become healthy before the server
	// is deleted, where deleting is allowed (default 10m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be a duration of at least 1m, e.g. 10m"
	HardRebootTimeout *metav1.Duration `json:"hardRebootTimeout,omitempty"`
	// Delete allows the last step (default true), and only for a server whose manager will replace it
	// (Replacement). false, or no manager, stops the escalation at the hard reboot and says so (NodesHealthy
	// reason NoReplacement, a Warning Event EscalationStopped).
	// +optional
	Delete *bool `json:"delete,omitempty"`
	// PowerOn starts a SHUTOFF server under a Node that stayed unhealthy past its dwell, once per escalation,
	// when no user stopped it: the last stop in its instance-action log is the cloud's own (Nova's power-state
	// sync after a compute host's crash), not a user's (default true). A server a user stopped is left off and
	// reported. The out-of-service taint goes on first and stays until the node is back.
	// +optional
	PowerOn *bool `json:"powerOn,omitempty"`
	// HostDown sees several unhealthy nodes of one compute host as one failure, of the host: Nova shows each
	// project a per-project hostId for its servers. Once at least minNodes of the cluster's nodes on one host
	// are unreachable (Ready Unknown) and none of them reports, while another host of the cluster has a node
	// that reports, no
	// reboot is sent to a server on it (rebooting on a dead hypervisor only times out); a server a manager
	// replaces (replacement) is deleted after softRebootTimeout + hardRebootTimeout instead, the others are
	// reported for an administrator to evacuate; the storm rule counts the host once.
	// +optional
	HostDown *HostDownRepair `json:"hostDown,omitempty"`
	// Replacement says which servers a manager replaces once they are deleted.
	// +optional
	Replacement *ServerReplacement `json:"replacement,omitempty"`
	// PerServer limits the steps taken on one server, against reboot loops.
	// +optional
	PerServer *PerServerLimits `json:"perServer,omitempty"`
	// ControlPlane: whether control-plane nodes are repaired (off by default).
	// +optional
	ControlPlane *ControlPlaneRepair `json:"controlPlane,omitempty"`
}

// UnhealthyCondition is a Node condition that makes the node unhealthy once it has held its status for
// Timeout.
type UnhealthyCondition struct {
	// Type of the Node condition, e.g. Ready, KernelDeadlock, PodNetworkHealthy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Type string `json:"type"`
	// Status of the condition that is unhealthy.
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status string `json:"status"`
	// Timeout: how long the condition must have had Status (from its lastTransitionTime).
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration, e.g. 5m"
	Timeout metav1.Duration `json:"timeout"`
}

// DrainForce says when a drain that has not finished by its timeout goes on without it.
// +kubebuilder:validation:Enum=WhenUnreachable;Never
type DrainForce string

const (
	// DrainForceWhenUnreachable: the step goes on once the drain timed out only when the node is
	// unreachable (Ready Unknown: its kubelet no longer reports), where no pod can end gracefully anyway.
	DrainForceWhenUnreachable DrainForce = "WhenUnreachable"
	// DrainForceNever: the step waits for the drain however long it takes, and says so.
	DrainForceNever DrainForce = "Never"
)

// NodeDrain tunes the drain that precedes a reboot or a delete. The node is cordoned first; its pods are
// evicted through the Eviction API, which honours PodDisruptionBudgets (DaemonSet pods and mirror pods stay,
// as kubectl drain leaves them); a reboot that heals the node uncordons it.
type NodeDrain struct {
	// Timeout of the drain (default 10m, at least 1m: a shorter one is taken as 1m). On a reachable node (or
	// with force Never) a drain not done by then ends: the node is uncordoned, the pool freed, the pods and
	// PodDisruptionBudgets that held it named, and the next drain waits perServer.cooldown.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration, e.g. 10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Force says when the step goes on after the timeout with pods left (default WhenUnreachable): a
	// PodDisruptionBudget of a reachable node is never overridden.
	// +optional
	Force DrainForce `json:"force,omitempty"`
}

// HostDownRepair tunes the host rule of the node repair.
type HostDownRepair struct {
	// Enabled (default true).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MinNodes is how many of the cluster's nodes on one host must be unhealthy, none healthy (default 2, at
	// least 2).
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000
	MinNodes *int32 `json:"minNodes,omitempty"`
}

// HostFinding is a compute host taken for down: several of the cluster's nodes on it unhealthy, none healthy.
type HostFinding struct {
	// HostID is Nova's hostId of the host (per project, opaque: never the host's name).
	// +kubebuilder:validation:MaxLength=64
	HostID string `json:"hostId"`
	// Zone is the availability zone of its servers.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Zone string `json:"zone,omitempty"`
	// Servers of the cluster on the host, sorted.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=64
	Servers []string `json:"servers"`
	// Since is when the host was first taken for down.
	Since metav1.Time `json:"since"`
}

// ServerReplacement says which servers a manager replaces once deleted: a node pool controller, a Senlin
// cluster, a Heat autoscaling group. Servers of Cluster API Machines, Gardener and Magnum are never deleted
// by flight, whatever this says: their managers replace them themselves.
type ServerReplacement struct {
	// MetadataKey: a server that carries this Nova metadata key (any value) is replaced by its manager
	// once deleted, e.g. "kubernikus:nodepool".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	MetadataKey string `json:"metadataKey"`
}

// PerServerLimits bound the steps on one server: a node that fails again and again is not rebooted
// for ever.
type PerServerLimits struct {
	// Cooldown: after a repaired node was healthy again, a new escalation of the same server takes its first
	// step no earlier than this after the last one (default 1h).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration, e.g. 1h"
	Cooldown *metav1.Duration `json:"cooldown,omitempty"`
	// MaxSteps is the most disruptive steps (reboots, deletes) on one server in any Window (default 3);
	// beyond it the server is left alone and reported (NodesHealthy reason RebootLoop, a Warning Event).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxSteps *int32 `json:"maxSteps,omitempty"`
	// Window of MaxSteps (default 24h).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="must be a duration from 1m to 720h, e.g. 24h"
	Window *metav1.Duration `json:"window,omitempty"`
}

// ControlPlaneRepair turns the repair of control-plane nodes (label node-role.kubernetes.io/control-plane)
// on. When on, one control-plane node at a time, and never when the etcd members left healthy would lose
// quorum.
type ControlPlaneRepair struct {
	// Enabled repairs control-plane nodes too (default false).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// SecurityGroupSyncRepair forces a security-group sync for a node whose agent reports a broken pod
// network.
type SecurityGroupSyncRepair struct {
	RepairSpec `json:",inline"`
	// MinInterval between two forced syncs of the cluster (default 10m).
	// +optional
	MinInterval *metav1.Duration `json:"minInterval,omitempty"`
}

// FlightRepairs configure each repair.
type FlightRepairs struct {
	// SecurityGroupRules keeps the rules the cluster needs in its security group.
	// +optional
	SecurityGroupRules RepairSpec `json:"securityGroupRules,omitempty"`
	// SecurityGroupAssociation gives a server of the cluster without the group the group back.
	// +optional
	SecurityGroupAssociation RepairSpec `json:"securityGroupAssociation,omitempty"`
	// Nodes repairs unhealthy nodes: cordon, drain, soft reboot, hard reboot, and a delete only where a
	// manager replaces the server.
	// +optional
	Nodes NodeRepair `json:"nodes,omitempty"`
	// ErroredServers deletes servers in vm_state error where the node repair would delete them: a manager
	// replaces the server (nodes.replacement), nodes.delete is on, and the node guards hold (not excluded,
	// not Cluster API's, Gardener's or Magnum's, no control-plane node unless turned on), one per node pool.
	// +optional
	ErroredServers RepairSpec `json:"erroredServers,omitempty"`
	// SecurityGroupSync forces a sync when the agent reports a broken pod network.
	// +optional
	SecurityGroupSync SecurityGroupSyncRepair `json:"securityGroupSync,omitempty"`
	// Routes reports duplicate routes, removes stale ones, re-adds missing ones and watches the
	// route limit.
	// +optional
	Routes RepairSpec `json:"routes,omitempty"`
}

// Condition types flight sets, one per repair.
const (
	// ConditionSecurityGroupRules: the cluster's security group holds every rule the cluster needs.
	ConditionSecurityGroupRules = "SecurityGroupRulesHealthy"
	// ConditionSecurityGroupAssociated: every server of the cluster has the cluster's security group.
	ConditionSecurityGroupAssociated = "SecurityGroupAssociated"
	// ConditionNodesHealthy: every server of the cluster has a healthy Node.
	ConditionNodesHealthy = "NodesHealthy"
	// ConditionServersHealthy: no server of the cluster is in vm_state error.
	ConditionServersHealthy = "ServersHealthy"
	// ConditionPodNetworkSynced: no node reports a broken pod network.
	ConditionPodNetworkSynced = "PodNetworkSynced"
	// ConditionPodRoutes: every Node's pod CIDR has one route, to the Node.
	ConditionPodRoutes = "PodRoutesHealthy"
	// ConditionRouteHeadroom: the router holds less than 80 % of its route limit.
	ConditionRouteHeadroom = "RouteHeadroom"
)

// Escalation steps of an unhealthy node.
const (
	EscalationObserved   = "Observed"
	EscalationSoftReboot = "SoftReboot"
	EscalationHardReboot = "HardReboot"
	EscalationDelete     = "Delete"
	// EscalationDrainTimedOut is the history's record of a drain that ended at its timeout on a reachable node
	// (a PodDisruptionBudget held a pod): no step was taken, and the next drain waits perServer.cooldown.
	EscalationDrainTimedOut = "DrainTimedOut"
)

// Phases of an escalation's step: the guards around it.
const (
	// PhaseDraining: the node is cordoned and its pods are being evicted; the step follows the drain.
	PhaseDraining = "Draining"
	// PhaseStarted: the step was recorded as started, before its cloud call was sent; it counts as taken at
	// Since (its next step is not taken before its timeout from then, and it is in the history), since a
	// process stopped between the record and the pass's status write cannot know whether the call went out.
	PhaseStarted = "Started"
	// PhaseTaken: the step was taken (the reboot or delete sent).
	PhaseTaken = "Taken"
	// PhaseStopped: no further step will be taken (Stopped says why): a human or the server's manager
	// takes over.
	PhaseStopped = "Stopped"
)

// NodeEscalation is where one unhealthy node stands in its escalation; kept in the status so that the
// timeouts survive operator restarts.
type NodeEscalation struct {
	// Node name ("" when the server never registered).
	// +optional
	Node string `json:"node,omitempty"`
	// Server ID.
	Server string `json:"server"`
	// Step last taken or under way (Observed, SoftReboot, HardReboot, Delete).
	Step string `json:"step"`
	// Phase of the step (Draining, Started, Taken, Stopped; empty while Observed).
	// +optional
	Phase string `json:"phase,omitempty"`
	// Since the step (or its phase) began: the time of its write (the cordon, the record before the cloud call,
	// the cloud call's answer), not the pass's start.
	Since metav1.Time `json:"since"`
	// FirstSeen is when the node was first seen unhealthy: the evidence of a delete.
	// +optional
	FirstSeen *metav1.Time `json:"firstSeen,omitempty"`
	// Reason the node is unhealthy, e.g. NeverRegistered, Ready=Unknown, KernelDeadlock=True.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Pool of the node (the value of spec.controllers.flight.repairs.nodes.nodePoolLabel).
	// +optional
	Pool string `json:"pool,omitempty"`
	// Cordoned: flight cordoned the Node (and uncordons it when the node heals; a Node cordoned by someone
	// else is left cordoned).
	// +optional
	Cordoned bool `json:"cordoned,omitempty"`
	// Tainted: flight put the node.kubernetes.io/out-of-service taint on the Node (and takes it off when
	// the node is back).
	// +optional
	Tainted bool `json:"tainted,omitempty"`
	// PoweredOn is when flight asked Nova to start the SHUTOFF server (recorded before the call: once per
	// escalation, also across restarts).
	// +optional
	PoweredOn *metav1.Time `json:"poweredOn,omitempty"`
	// Stopped says why no further step will be taken (NoReplacement, ManagedByGardener, RebootLoop, ...).
	// +optional
	Stopped string `json:"stopped,omitempty"`
}

// StepRecord is one disruptive step taken on a server.
type StepRecord struct {
	// Step taken: SoftReboot, HardReboot, Delete; or DrainTimedOut, a drain that ended without one.
	Step string `json:"step"`
	// Time it was taken.
	Time metav1.Time `json:"time"`
	// Reason the node was unhealthy.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ServerHistory is the steps taken on one server, newest last, within the per-server window: the memory
// that caps reboot loops, kept after the node heals.
type ServerHistory struct {
	// Server ID.
	Server string `json:"server"`
	// Steps within the window, newest last.
	// +kubebuilder:validation:MaxItems=100
	Steps []StepRecord `json:"steps"`
}

// ServerSighting is a server seen in a bad state, with when it was first seen so.
type ServerSighting struct {
	// Server ID.
	Server string `json:"server"`
	// Name of the server.
	// +optional
	Name string `json:"name,omitempty"`
	// FirstSeen in this state.
	FirstSeen metav1.Time `json:"firstSeen"`
	// Cordoned: flight cordoned the server's Node before deleting the server (recorded before the cordon was
	// sent), and uncordons it if the server leaves vm_state error instead.
	// +optional
	Cordoned bool `json:"cordoned,omitempty"`
}

// RouteSighting is a route seen stale, with when it was first seen so.
type RouteSighting struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
	// FirstSeen stale.
	FirstSeen metav1.Time `json:"firstSeen"`
}

// FlightCounts are the numbers of flight's last complete pass.
type FlightCounts struct {
	// Servers of the cluster.
	Servers int32 `json:"servers"`
	// Nodes of the workload cluster.
	Nodes int32 `json:"nodes"`
	// Unhealthy servers (any repair found something wrong with them).
	Unhealthy int32 `json:"unhealthy"`
	// Routes on the router.
	Routes int32 `json:"routes"`
	// HostsDown are the compute hosts taken for down (status.flight.hostsDown).
	// +optional
	HostsDown int32 `json:"hostsDown,omitempty"`
}

// FlightStatus reports flight.
type FlightStatus struct {
	ControllerStatus `json:",inline"`
	// SecurityGroupID is the cluster's security group as last resolved.
	// +optional
	SecurityGroupID string `json:"securityGroupID,omitempty"`
	// Counts of the last complete pass.
	// +optional
	Counts FlightCounts `json:"counts,omitempty"`
	// Escalations of unhealthy nodes.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Escalations []NodeEscalation `json:"escalations,omitempty"`
	// History of the disruptive steps taken on each server within spec.controllers.flight.repairs.nodes.
	// perServer.window (bounded: the servers of the last steps, and each server's steps in the window).
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	History []ServerHistory `json:"history,omitempty"`
	// HostsDown are the compute hosts the node repair takes for down, one finding each.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	HostsDown []HostFinding `json:"hostsDown,omitempty"`
	// Errored servers: when each was first seen in vm_state error.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Errored []ServerSighting `json:"errored,omitempty"`
	// StaleRoutes: duplicate routes whose nexthop is gone, with when each was first seen so.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	StaleRoutes []RouteSighting `json:"staleRoutes,omitempty"`
	// LastSecurityGroupSync is when flight last forced a security-group sync.
	// +optional
	LastSecurityGroupSync *metav1.Time `json:"lastSecurityGroupSync,omitempty"`
}

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

// NeverHealthyRepair escalates a server whose Node never becomes healthy: soft reboot, then hard
// reboot, then delete, each step after its own timeout.
type NeverHealthyRepair struct {
	RepairSpec `json:",inline"`
	// SpawnTimeout: an ACTIVE server with no Ready Node this long after it was created is never-healthy
	// (default 15m).
	// +optional
	SpawnTimeout *metav1.Duration `json:"spawnTimeout,omitempty"`
	// SoftRebootTimeout: how long after a soft reboot the node may take to become healthy before a hard
	// reboot (default 5m).
	// +optional
	SoftRebootTimeout *metav1.Duration `json:"softRebootTimeout,omitempty"`
	// HardRebootTimeout: how long after a hard reboot before the server is deleted (default 10m).
	// +optional
	HardRebootTimeout *metav1.Duration `json:"hardRebootTimeout,omitempty"`
	// Delete allows the last step (default true); false stops the escalation at the hard reboot.
	// +optional
	Delete *bool `json:"delete,omitempty"`
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
	// NeverHealthy escalates servers whose Node never becomes healthy.
	// +optional
	NeverHealthy NeverHealthyRepair `json:"neverHealthy,omitempty"`
	// ErroredServers deletes servers in vm_state error.
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

// Escalation steps of a never-healthy node.
const (
	EscalationObserved   = "Observed"
	EscalationSoftReboot = "SoftReboot"
	EscalationHardReboot = "HardReboot"
	EscalationDelete     = "Delete"
)

// NodeEscalation is where one never-healthy node stands in its escalation; kept in the status so that
// the timeouts survive operator restarts.
type NodeEscalation struct {
	// Node name ("" when the server never registered).
	// +optional
	Node string `json:"node,omitempty"`
	// Server ID.
	Server string `json:"server"`
	// Step last taken (Observed, SoftReboot, HardReboot, Delete).
	Step string `json:"step"`
	// Since the step was taken.
	Since metav1.Time `json:"since"`
	// FirstSeen is when the node was first seen unhealthy: the evidence of a delete.
	// +optional
	FirstSeen *metav1.Time `json:"firstSeen,omitempty"`
	// Reason the node is unhealthy, e.g. NotReady, NeverRegistered, PodNetworkBroken.
	// +optional
	Reason string `json:"reason,omitempty"`
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
	// Escalations of never-healthy nodes.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Escalations []NodeEscalation `json:"escalations,omitempty"`
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

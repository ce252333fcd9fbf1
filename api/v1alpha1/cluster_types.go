package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Annotations and the finalizer the operator reads and writes on a VitalsCluster.
const (
	// AnnotationPaused: "true" holds back every destructive action of every controller for this cluster
	// (reads, detection and reports go on).
	AnnotationPaused = "vitals.vitalsproject.io/paused"
	// AnnotationExclude: a comma-separated list of cloud-side IDs or names (routers, servers, volumes,
	// load balancers, security groups, ports) that no controller ever acts on; a route is excluded by its
	// destination CIDR or "destination@nexthop".
	AnnotationExclude = "vitals.vitalsproject.io/exclude"
	// FinalizerDeorbit is set on every VitalsCluster whose deletionPolicy is Deorbit; it is removed once the
	// cluster's cloud resources are cleaned up after deletion (or deorbit gave up), and at once from a
	// cluster whose policy is Orphan.
	FinalizerDeorbit = "vitals.vitalsproject.io/deorbit"
	// AnnotationConfirmDeorbit confirms that a VitalsCluster with deletionPolicy Deorbit may tear its
	// cluster down once it is deleted: its value must be the VitalsCluster's own metadata.uid (a
	// confirmation names one resource, never a later one of the same name). One of the three interlocks;
	// the others need no annotation (the owner being deleted, the servers gone).
	AnnotationConfirmDeorbit = "vitals.vitalsproject.io/confirm-deorbit"
	// AnnotationKeep "true" on a PersistentVolumeClaim or PersistentVolume of the workload cluster, or the same
	// key in a Cinder volume's metadata, keeps it through deorbit: the claim is not deleted and its volume is
	// never deleted (state Kept in status.deorbit).
	AnnotationKeep = "vitals.vitalsproject.io/keep"
)

// LabelEnrolledBy on a VitalsCluster, with the value EnrolledByEnrolment, says that the Cluster API enrolment
// made it. Only the operator writes it, when it creates the VitalsCluster; the enrolment acts only on a
// VitalsCluster that carries it and is controlled by the Cluster (owner reference). One a user or a tool made with
// a controller reference to a Cluster is left alone: not followed, paused, deleted with the Cluster nor waited for
// by Cluster API's BeforeClusterDelete hook.
const LabelEnrolledBy = "vitals.vitalsproject.io/enrolled-by"

// EnrolledByEnrolment is the value of LabelEnrolledBy: the enrolment's field manager (vitals-enrol).
const EnrolledByEnrolment = "vitals-enrol"

// DeletionPolicy says what deleting a VitalsCluster does to the cluster it describes.
// +kubebuilder:validation:Enum=Orphan;Deorbit
type DeletionPolicy string

const (
	// DeletionPolicyOrphan: the VitalsCluster goes and nothing else is touched, in the workload cluster or
	// in the cloud. The default: a VitalsCluster is a record beside a cluster, not the cluster.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
	// DeletionPolicyDeorbit: deleting the VitalsCluster tears down what the cluster left in the cloud
	// (deorbit), but only while an interlock proves the cluster itself is going: its owner (a Cluster API
	// Cluster or OpenStackCluster) is being deleted, its servers are gone or going, or the annotation
	// AnnotationConfirmDeorbit names the VitalsCluster's UID. Until then the finalizer holds and nothing is
	// deleted. The default of the VitalsClusters Vitals creates for Cluster API clusters.
	DeletionPolicyDeorbit DeletionPolicy = "Deorbit"
)

// CIDR is an IPv4 or IPv6 network in CIDR notation with no host bits set, e.g. 10.100.0.0/16.
//
// +kubebuilder:validation:MaxLength=49
// +kubebuilder:validation:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked()",message="must be a network in CIDR notation with no host bits set, e.g. 10.100.0.0/16 or fd00:10::/64"
type CIDR string

// SecretKeyRef names one key of a Secret in the Cluster's namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret's data; each reference documents its default.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// OpenStackSpec says where the cluster's cloud resources live and how to reach them.
type OpenStackSpec struct {
	// CredentialsSecretRef names a Secret holding a clouds.yaml (key default "clouds.yaml").
	// Empty: the operator's own OpenStack credentials.
	// +optional
	CredentialsSecretRef *SecretKeyRef `json:"credentialsSecretRef,omitempty"`
	// CACertKey is a key of the credentials Secret holding the CA bundle (PEM) the cloud's certificates are
	// checked with, as CAPO's identity Secret holds it (key cacert): when the Secret has it, the clouds.yaml's
	// own cacert is not read. A Secret without the key uses its clouds.yaml as it is.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CACertKey string `json:"caCertKey,omitempty"`
	// Cloud is the entry of clouds.yaml to use (default: "openstack", or the operator's default).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Cloud string `json:"cloud,omitempty"`
	// ProjectID is the project holding the cluster's ports and servers (default: the credentials' project).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProjectID string `json:"projectID,omitempty"`
	// RouterID is the Neutron router carrying the pod routes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	RouterID string `json:"routerID"`
	// NetworkID is the nodes' network.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	NetworkID string `json:"networkID,omitempty"`
	// SubnetID is the nodes' subnet: routes whose nexthop lies in it are expected to point at its ports.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SubnetID string `json:"subnetID,omitempty"`
	// SecurityGroupName is the nodes' security group.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	SecurityGroupName string `json:"securityGroupName,omitempty"`
	// SecurityGroupID is the nodes' security group by ID; it wins over SecurityGroupName.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SecurityGroupID string `json:"securityGroupID,omitempty"`
	// ClusterName is the name the cloud provider tags the cluster's resources with: the OpenStack
	// cloud controller manager's --cluster-name (load balancers kube_service_<name>_...) and Cinder
	// CSI's --cluster (volume metadata cinder.csi.openstack.org/cluster). Default: the resource's name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClusterName string `json:"clusterName,omitempty"`
}

// ControllerSpec holds the settings every controller shares.
type ControllerSpec struct {
	// Enabled turns the controller on for this cluster (default true).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Interval between passes (default 1m, at least 1s).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="must be a duration of at least 1s, e.g. 30s or 5m"
	Interval *metav1.Duration `json:"interval,omitempty"`
	// DryRun: analyse and report, change nothing.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Budget is the most actions the controller takes in one pass (default 10).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Budget *int32 `json:"budget,omitempty"`
}

// ProtectedRoute is a route the route collector never removes. An empty nexthop protects every route
// to the destination.
type ProtectedRoute struct {
	// Destination of the route.
	Destination CIDR `json:"destination"`
	// NextHop of the route; empty matches any.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="must be an IP address, e.g. 10.0.0.5"
	NextHop string `json:"nexthop,omitempty"`
}

// AddressSource is where the route collector learns which nexthops are alive.
// +kubebuilder:validation:Enum=ports;servers
type AddressSource string

const (
	// AddressSourcePorts: the fixed IPs and allowed address pairs of every Neutron port of the project.
	AddressSourcePorts AddressSource = "ports"
	// AddressSourceServers: the addresses Nova reports for every server of the project.
	AddressSourceServers AddressSource = "servers"
)

// RouteGCSpec configures the route garbage collector.
type RouteGCSpec struct {
	ControllerSpec `json:",inline"`
	// ProtectedRoutes are never removed.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	ProtectedRoutes []ProtectedRoute `json:"protectedRoutes,omitempty"`
	// AddressSources tell which nexthops are alive (default: ports and servers). A nexthop known to any
	// source is alive; every listed source must be read completely for a pass to act.
	// +optional
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	AddressSources []AddressSource `json:"addressSources,omitempty"`
}

// BudgetSpec bounds destructive actions over a sliding window.
type BudgetSpec struct {
	// Actions is the most destructive actions in any Window (default 10). 0 means none: every action
	// is held back and reported.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Actions *int32 `json:"actions,omitempty"`
	// Window of the budget (default 1h).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="must be a duration from 1m to 168h, e.g. 1h"
	Window *metav1.Duration `json:"window,omitempty"`
}

// RemediationSpec is this cluster's remediation policy: what every controller asks before a destructive
// action. The operator's own limits (operator-wide budget, pause, dry-run) apply on top.
type RemediationSpec struct {
	// DryRun: every controller detects and reports, and changes nothing.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Budget across all controllers of this cluster (default 10 actions per 1h).
	// +optional
	Budget *BudgetSpec `json:"budget,omitempty"`
	// MaxUnhealthy is the storm rule: when more of a controller's objects than this (a number, or a
	// percentage such as "40%") look broken at once, the controller acts on none of them and reports a
	// storm (default "40%").
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`
	// MinProofAge is how long the evidence for a removal must have been seen before the removal
	// (default 5m). Floor 1m: less (0s too) is raised to 1m, unless the VitalsCluster is annotated
	// vitals.vitalsproject.io/unsafe-allow-short-proof-age: "true", which is unsafe (a removal may act
	// on evidence seen for seconds) and is said in RemediationAllowed and each early removal's Event.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration, e.g. 5m"
	MinProofAge *metav1.Duration `json:"minProofAge,omitempty"`
	// OutageFreeze: after the workload cluster's API server or the cloud's API was unreachable, or most
	// node Leases were stale at once, disruptive and destructive actions (reboots, drains, deletes, route
	// removals) stay held this long, and every unhealthy node's timer starts again: an outage never turns
	// into mass repairs (default 10m; 0s: resume at once, timers still restart). Safe repairs (security
	// group rules and associations, forced syncs, re-added routes) are never held by it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="must be a duration from 0s to 24h, e.g. 10m"
	OutageFreeze *metav1.Duration `json:"outageFreeze,omitempty"`
}

// ControllersSpec configures the controllers for one cluster.
type ControllersSpec struct {
	// RouteGC removes pod routes of the router whose nexthop no longer exists.
	// +optional
	RouteGC RouteGCSpec `json:"routegc,omitempty"`
	// Deorbit deletes the cluster's cloud resources when the VitalsCluster is deleted.
	// +optional
	Deorbit DeorbitSpec `json:"deorbit,omitempty"`
	// Flight keeps the cluster's nodes and networking healthy.
	// +optional
	Flight FlightSpec `json:"flight,omitempty"`
	// CloudHeal repairs the cloud resources the cluster's own controllers made: volumes held by
	// attachments to servers that are gone.
	// +optional
	CloudHeal CloudHealSpec `json:"cloudheal,omitempty"`
}

// ClusterSpec describes one Kubernetes cluster on OpenStack.
type ClusterSpec struct {
	// KubeconfigSecretRef names a Secret with the cluster's kubeconfig (key default "kubeconfig").
	// Empty: the cluster the operator runs in.
	// +optional
	KubeconfigSecretRef *SecretKeyRef `json:"kubeconfigSecretRef,omitempty"`
	// OpenStack resources of the cluster.
	OpenStack OpenStackSpec `json:"openstack"`
	// PodCIDRs hold every pod network of the cluster: a router route is the cluster's only if its
	// destination lies entirely inside one of them.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	PodCIDRs []CIDR `json:"podCIDRs"`
	// Remediation is the policy every controller asks before a destructive action.
	// +optional
	Remediation RemediationSpec `json:"remediation,omitempty"`
	// Controllers configure each controller for this cluster.
	// +optional
	Controllers ControllersSpec `json:"controllers,omitempty"`
	// WorkloadCredentials are the Secrets of the workload cluster's own consumers of OpenStack credentials
	// (the cloud controller manager, Cinder CSI) whose expiry and rotation the access controller checks
	// (status.access.workloadCredentials, the WorkloadCredentialsHealthy condition).
	// +optional
	WorkloadCredentials WorkloadCredentialsSpec `json:"workloadCredentials,omitempty"`
	// DeletionPolicy says what deleting this VitalsCluster does: Orphan (the default) deletes nothing but
	// the VitalsCluster; Deorbit deletes the cluster's volumes, load balancers, routes and what they left in
	// Neutron, once an interlock proves the cluster itself is going (see DeletionPolicyDeorbit).
	// +optional
	// +kubebuilder:default=Orphan
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// WorkloadCredentialsSpec names the workload cluster's Secrets that hold OpenStack credentials of its own.
type WorkloadCredentialsSpec struct {
	// Enabled turns the check on (default true). Off, the operator needs no access to the workload cluster's
	// Secrets and pods in kube-system.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Secrets to check, in the workload cluster's namespace kube-system (default: cloud-config, the cloud
	// controller manager's, and cinder-csi-cloud-config, Cinder CSI's, each with key cloud.conf).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	Secrets []WorkloadCredentialsSecret `json:"secrets,omitempty"`
}

// WorkloadCredentialsSecret is one Secret of the workload cluster's kube-system holding a consumer's
// credentials: a cloud.conf ([Global] auth-url and credentials; use-clouds = true reads its clouds.yaml key)
// or a clouds.yaml.
type WorkloadCredentialsSecret struct {
	// Name of the Secret in kube-system.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key holding the cloud.conf or clouds.yaml (default: cloud.conf, else clouds.yaml).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
	// Consumer names who uses it, for the reports (default: the Secret's name).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Consumer string `json:"consumer,omitempty"`
	// Cloud is the clouds.yaml entry (default: the cloud.conf's cloud, else "openstack").
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Cloud string `json:"cloud,omitempty"`
}

// DefaultWorkloadCredentialsSecrets are the Secrets checked when spec.workloadCredentials.secrets is empty:
// cloud-provider-openstack's conventional ones.
var DefaultWorkloadCredentialsSecrets = []WorkloadCredentialsSecret{
	{Name: "cloud-config", Consumer: "cloud controller manager"},
	{Name: "cinder-csi-cloud-config", Consumer: "Cinder CSI"},
}

// WorkloadCredentialsNamespace is the workload cluster's namespace of the consumers and their Secrets.
const WorkloadCredentialsNamespace = "kube-system"

// On reports whether the check is on (Enabled unset or true).
func (s WorkloadCredentialsSpec) On() bool { return s.Enabled == nil || *s.Enabled }

// Checked are the Secrets to check: Secrets, else DefaultWorkloadCredentialsSecrets; none when off.
func (s WorkloadCredentialsSpec) Checked() []WorkloadCredentialsSecret {
	switch {
	case !s.On():
		return nil
	case len(s.Secrets) > 0:
		return s.Secrets
	}
	return DefaultWorkloadCredentialsSecrets
}

// Deletion is the cluster's deletion policy, Orphan when unset.
func (s *ClusterSpec) Deletion() DeletionPolicy {
	if s.DeletionPolicy == "" {
		return DeletionPolicyOrphan
	}
	return s.DeletionPolicy
}

// Condition types of a Cluster.
const (
	// ConditionReady summarises the others (see ReadyReasons): True when the cluster's cloud is verified, its
	// workload cluster is reachable, and every enabled controller has completed a pass of the current spec
	// and can read what it looks after. Written by the operator alone, from the other conditions.
	ConditionReady = "Ready"
	// ConditionRoutesHealthy: the last route pass found no orphaned route left in place.
	ConditionRoutesHealthy = "RoutesHealthy"
	// ConditionCloudVerified: the credentials authenticate to one project and every resource the spec
	// names was proven to belong to it (reasons: Verified, MissingCredentials, UntrustedNamespace,
	// InvalidCredentials, ForeignResource, ForeignProject, PodCIDRTooWide, PodCIDROverlap, CloudUnavailable).
	ConditionCloudVerified = "CloudVerified"
	// ConditionWorkloadReachable: the workload cluster's API answers and the operator's informers on it
	// have synced.
	ConditionWorkloadReachable = "WorkloadReachable"
	// ConditionCredentialsHealthy: the cluster's credentials authenticate and do not expire within the
	// operator's warning window, --credentials-expiry-warning (reasons: NoExpiry, Valid, ExpiringSoon, Expired,
	// ExpiryUnknown, and the CloudVerified reasons MissingCredentials and InvalidCredentials). Not part of Ready:
	// the cluster works until the credentials expire.
	ConditionCredentialsHealthy = "CredentialsHealthy"
	// ConditionWorkloadCredentialsHealthy: the OpenStack credentials of the workload cluster's own consumers
	// (the cloud controller manager's, Cinder CSI's Secrets; spec.workloadCredentials) authenticate to the
	// cluster's Keystone, do not expire within the warning window, and every consumer started after their
	// Secret's last change (reasons: NoExpiry, Valid, ExpiringSoon, Expired, ExpiryUnknown, InvalidCredentials,
	// ConsumersStale, OtherKeystone, NotReadable, NotFound, CloudUnavailable). A condition of its own, beside
	// CredentialsHealthy: other credentials, another owner and another fix (the workload cluster's Secret,
	// and its pods' restart), which must neither hide nor be hidden by the cluster's own. Not part of Ready.
	ConditionWorkloadCredentialsHealthy = "WorkloadCredentialsHealthy"
	// ConditionRemediationAllowed: the remediation policy lets controllers act (reasons: Allowed, Paused,
	// OperatorPaused, DryRun, BudgetExhausted, Storm, GateClosed).
	ConditionRemediationAllowed = "RemediationAllowed"
)

// ActionKind says what a controller did with one object.
type ActionKind string

const (
	// ActionRemoved: the controller changed the cloud.
	ActionRemoved ActionKind = "Removed"
	// ActionWouldRemove: dry-run; the controller would have changed the cloud.
	ActionWouldRemove ActionKind = "WouldRemove"
	// ActionSkipped: a safety rule held the controller back.
	ActionSkipped ActionKind = "Skipped"
	// ActionFailed: the change was tried and failed.
	ActionFailed ActionKind = "Failed"
	// ActionDone: the controller changed something without taking it away (e.g. a reboot).
	ActionDone ActionKind = "Done"
	// ActionWouldDo: dry-run; the controller would have done so.
	ActionWouldDo ActionKind = "WouldDo"
)

// Action is one line of a controller's history.
type Action struct {
	// Time of the action.
	Time metav1.Time `json:"time"`
	// Controller that acted.
	Controller string `json:"controller"`
	// Action taken.
	Action ActionKind `json:"action"`
	// Object acted on, e.g. "198.19.3.0/24 via 10.0.0.7".
	Object string `json:"object"`
	// Reason in CamelCase, e.g. Orphaned, Budget, DryRun.
	Reason string `json:"reason"`
	// Message for humans.
	// +optional
	Message string `json:"message,omitempty"`
}

// SuspectRoute is a route seen orphaned; it is removed only once seen orphaned in two passes at least
// one interval apart. Kept in the status so that the proof survives operator restarts.
type SuspectRoute struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
	// FirstSeen is when a pass first saw the route orphaned.
	FirstSeen metav1.Time `json:"firstSeen"`
	// Passes counts the passes in a row that saw it orphaned, up to 2 (the proof needs two).
	// +kubebuilder:validation:Maximum=2
	Passes int32 `json:"passes"`
}

// RouteCounts are the routes of the cluster's router as of the route collector's last complete pass.
type RouteCounts struct {
	// Routes on the router.
	Routes int32 `json:"routes"`
	// Ours: routes inside the pod CIDRs.
	Ours int32 `json:"ours"`
	// Live: our routes whose nexthop exists.
	Live int32 `json:"live"`
	// Orphaned: our routes whose nexthop exists nowhere (removed, awaiting proof, or held back).
	Orphaned int32 `json:"orphaned"`
	// Protected: routes on the protected list.
	Protected int32 `json:"protected"`
}

// ControllerStatus is what every controller reports of itself, in its own block of the status. A
// controller writes its block and its conditions only when they change: a pass that changes nothing
// writes nothing (per-pass times and counts are metrics).
type ControllerStatus struct {
	// ObservedGeneration is the spec generation of the controller's last complete pass.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Actions are the controller's last actions taken or held back, newest last (at most MaxActions):
	// its own and the remediation policy's decisions on them.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Actions []Action `json:"actions,omitempty"`
}

// AccessStatus reports the access controller: the proof of the cluster's project and of every resource its
// spec names, and the reach of its workload cluster (conditions CloudVerified and WorkloadReachable).
type AccessStatus struct {
	ControllerStatus `json:",inline"`
	// Credentials are what the cluster's credentials are and when they expire, as of the last proof that
	// authenticated (the CredentialsHealthy condition). Never the credential's ID, name or secret.
	// +optional
	Credentials *CredentialsStatus `json:"credentials,omitempty"`
	// WorkloadCredentials are the workload cluster's consumer Secrets checked (spec.workloadCredentials), as of
	// the last check (the WorkloadCredentialsHealthy condition). Never a credential's ID, name or secret.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	WorkloadCredentials []WorkloadCredentialStatus `json:"workloadCredentials,omitempty"`
}

// WorkloadCredentialStatus is what one consumer Secret of the workload cluster holds, and whether its consumers
// picked up its last change.
type WorkloadCredentialStatus struct {
	// Secret is the Secret and key, "kube-system/NAME key KEY".
	// +kubebuilder:validation:MaxLength=512
	Secret string `json:"secret"`
	// Consumer is who uses it (spec.workloadCredentials.secrets[].consumer).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Consumer string `json:"consumer,omitempty"`
	// Kind of credential: ApplicationCredential or Password (unset when it could not be read).
	// +optional
	// +kubebuilder:validation:Enum=ApplicationCredential;Password;Token
	Kind string `json:"kind,omitempty"`
	// Reason is the verdict, as the condition's reasons (NoExpiry, Valid, ExpiringSoon, Expired, ...).
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
	// Message says it for humans; never a credential's contents nor Keystone's answer.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// ExpiresAt is when Keystone stops accepting the credential (unset: it does not, or it is not known).
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// SecretResourceVersion is the resourceVersion of the Secret as last seen: a new one is a rotation.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SecretResourceVersion string `json:"secretResourceVersion,omitempty"`
	// ChangeSeen is when the operator first saw the Secret's current version after another one (unset until a
	// change is seen): every consumer must have started since.
	// +optional
	ChangeSeen *metav1.Time `json:"changeSeen,omitempty"`
	// StaleConsumers are the pods of kube-system that use the Secret (a secret volume or an env secretKeyRef) and
	// started before ChangeSeen: they still hold the old credentials (at most 16, sorted).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	StaleConsumers []string `json:"staleConsumers,omitempty"`
}

// CredentialsStatus is what a cluster's credentials are and when Keystone stops accepting them.
type CredentialsStatus struct {
	// Kind of credential: ApplicationCredential, Password or Token.
	// +kubebuilder:validation:Enum=ApplicationCredential;Password;Token
	Kind string `json:"kind"`
	// Source names where they came from ("secret NS/NAME key KEY (cloud C)" or "the operator's credentials").
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Source string `json:"source,omitempty"`
	// ExpiresAt is when Keystone stops accepting them (unset: they do not expire): an application credential's
	// expires_at, a password's password_expires_at, a bare token's expiry.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// AuthenticatedSince is when these credentials (this version of their Secret) first authenticated: after a
	// rotation of the Secret, the proof that the new credentials work.
	// +optional
	AuthenticatedSince *metav1.Time `json:"authenticatedSince,omitempty"`
	// SecretResourceVersion is the resourceVersion of the credentials Secret they were read from (unset for the
	// operator's own credentials): a new one is a rotation.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SecretResourceVersion string `json:"secretResourceVersion,omitempty"`
}

// RouteGCStatus reports the route collector.
type RouteGCStatus struct {
	ControllerStatus `json:",inline"`
	// Counts of the last complete pass.
	// +optional
	Counts RouteCounts `json:"counts,omitempty"`
	// RemovedTotal counts every route removed for this cluster.
	// +optional
	RemovedTotal int64 `json:"removedTotal,omitempty"`
	// Suspects are routes seen orphaned, awaiting their second sighting or held back.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Suspects []SuspectRoute `json:"suspects,omitempty"`
}

// RemediationStatus is the remediation policy's state for one cluster. The action times are kept here so
// that the sliding-window budget survives operator restarts and fail-overs.
type RemediationStatus struct {
	// ActionTimes are the times of the destructive actions taken within the budget window, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	ActionTimes []metav1.Time `json:"actionTimes,omitempty"`
	// BudgetRemaining is how many actions the window still allows.
	// +optional
	BudgetRemaining int32 `json:"budgetRemaining,omitempty"`
	// StormSince is when the storm rule last tripped; actions resume after the cool-down.
	// +optional
	StormSince *metav1.Time `json:"stormSince,omitempty"`
	// LastOutage is when an outage was last seen (the workload API server or the cloud unreachable, most
	// node Leases stale); disruptive and destructive actions resume spec.remediation.outageFreeze after it.
	// +optional
	LastOutage *metav1.Time `json:"lastOutage,omitempty"`
	// LastOutageReason says what the last outage was.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LastOutageReason string `json:"lastOutageReason,omitempty"`
}

// ClusterStatus is what the controllers observed and did. Each controller owns its block and its
// conditions and writes them as a server-side apply of its own fields (field manager vitals-<controller>),
// so that controllers never overwrite or conflict with each other.
type ClusterStatus struct {
	// ObservedGeneration is the spec generation every enabled controller has completed a pass for, as of
	// the Ready condition.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (the summary), CloudVerified and WorkloadReachable (access), RemediationAllowed
	// (the remediation policy), RoutesHealthy (routegc), flight's, VolumeAttachmentsHealthy (cloudheal),
	// CleanedUp (deorbit).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProjectID is the OpenStack project the cluster's credentials were proven to act in.
	// +optional
	ProjectID string `json:"projectID,omitempty"`
	// Access reports the access controller.
	// +optional
	Access *AccessStatus `json:"access,omitempty"`
	// Remediation reports the remediation policy's state for this cluster.
	// +optional
	Remediation *RemediationStatus `json:"remediation,omitempty"`
	// RouteGC reports the route collector.
	// +optional
	RouteGC *RouteGCStatus `json:"routegc,omitempty"`
	// Deorbit reports the clean-up after deletion.
	// +optional
	Deorbit *DeorbitStatus `json:"deorbit,omitempty"`
	// Flight reports the node and network repairs.
	// +optional
	Flight *FlightStatus `json:"flight,omitempty"`
	// CloudHeal reports the repairs of the cloud resources the cluster's controllers made.
	// +optional
	CloudHeal *CloudHealStatus `json:"cloudheal,omitempty"`
}

// MaxActions is how many actions each controller's block keeps.
const MaxActions = 20

// VitalsCluster is one Kubernetes cluster on OpenStack looked after by Vitals. The kind is not
// "Cluster": that one belongs to Cluster API (clusters.cluster.x-k8s.io), beside which Vitals runs.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=vcl,categories=vitals,path=vitalsclusters,singular=vitalscluster
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Routes",type=string,JSONPath=`.status.conditions[?(@.type=="RoutesHealthy")].status`
// +kubebuilder:printcolumn:name="Nodes",type=string,JSONPath=`.status.conditions[?(@.type=="NodesHealthy")].status`
// +kubebuilder:printcolumn:name="Remediation",type=string,JSONPath=`.status.conditions[?(@.type=="RemediationAllowed")].reason`,priority=1
// +kubebuilder:printcolumn:name="Project",type=string,JSONPath=`.status.projectID`,priority=1
// +kubebuilder:printcolumn:name="Router",type=string,JSONPath=`.spec.openstack.routerID`,priority=1
// +kubebuilder:printcolumn:name="Deletion",type=string,JSONPath=`.spec.deletionPolicy`,priority=1
// +kubebuilder:printcolumn:name="Credentials",type=string,JSONPath=`.status.conditions[?(@.type=="CredentialsHealthy")].reason`,priority=1
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.status.access.credentials.expiresAt`,priority=1
// +kubebuilder:printcolumn:name="Removed",type=integer,JSONPath=`.status.routegc.removedTotal`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VitalsCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// VitalsClusterList is a list of VitalsClusters.
//
// +kubebuilder:object:root=true
type VitalsClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VitalsCluster `json:"items"`
}

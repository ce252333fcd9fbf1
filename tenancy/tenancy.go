package tenancy

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

// Cloud is what controllers may call in a cluster's project.
type Cloud interface {
	openstack.Routers
	openstack.Ports
	openstack.FloatingIPs
	openstack.Servers
	openstack.SecurityGroups
	openstack.Volumes
	openstack.LoadBalancers
	openstack.Quotas
}

// Scope is a cluster's proven place in the cloud.
type Scope struct {
	// Cloud is connected with the cluster's credentials (or the operator's, in a trusted namespace).
	Cloud Cloud
	// ProjectID the credentials authenticate to; every list and write of the cluster is limited to it.
	ProjectID string
	// Source says which credentials: "secret NS/NAME key KEY" or "operator credentials".
	Source string
	// Router named by the spec, read and proven to be the project's; nil when it is gone (Gone).
	Router *openstack.Router
	// Subnet named by the spec (spec.openstack.subnetID), read and proven to be the project's; nil when the
	// spec names none or it is gone (Gone).
	Subnet *openstack.Subnet
	// Gone lists what the spec names that the project no longer shows ("router ID", "network ID", "subnet ID",
	// "security group \"NAME\""): only for a cluster being deleted that was proven in this project before
	// (its owner's teardown may have deleted them), never for a live one, whose Scope names them all.
	Gone []string
	// ConnectedAt is when the connection with these credentials (this version of their Secret) first
	// authenticated (zero for the operator's own credentials).
	ConnectedAt time.Time
	// SecretVersion is the resourceVersion of the credentials Secret the connection was made from ("" for the
	// operator's own credentials).
	SecretVersion string
	// Credentials read what the credentials are and when they expire (nil: the connection cannot tell).
	Credentials CredentialReader
	// Keystone is the Keystone these credentials proved, the only one other credentials of the cluster (its
	// workload cluster's) are tried against (nil: the connection cannot tell its endpoint).
	Keystone *Keystone
}

// CredentialReader is a Connection that can tell what its credentials are and when they expire
// (openstack.Cloud is one).
type CredentialReader interface {
	Credential(ctx context.Context) (openstack.Credential, error)
}

// Resolver gives each cluster its Scope, or a *Refusal.
type Resolver interface {
	Resolve(ctx context.Context, c *v1alpha1.VitalsCluster) (*Scope, error)
	// Forget drops what is cached for a cluster that is gone (its connected cloud).
	Forget(cluster types.NamespacedName)
}

// Reasons of a Refusal, for the CloudVerified condition and Events.
const (
	// ReasonVerified is the CloudVerified reason when nothing was refused.
	ReasonVerified = "Verified"
	// ReasonMissingCredentials: no credentials Secret, and the namespace is not trusted with the
	// operator's credentials (or the operator has none).
	ReasonMissingCredentials = "MissingCredentials"
	// ReasonUntrustedNamespace: the operator's credentials were asked for in a namespace not trusted
	// with them.
	ReasonUntrustedNamespace = "UntrustedNamespace"
	// ReasonInvalidCredentials: the Secret, its key or its clouds.yaml is unusable, the credentials
	// are refused by Keystone, or they are not scoped to a project.
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonForeignResource: a resource the spec names is not the project's.
	ReasonForeignResource = "ForeignResource"
	// ReasonForeignProject: spec.openstack.projectID is not the credentials' project.
	ReasonForeignProject = "ForeignProject"
	// ReasonPodCIDRTooWide: a pod CIDR is wider than the operator allows.
	ReasonPodCIDRTooWide = "PodCIDRTooWide"
	// ReasonPodCIDROverlap: a pod CIDR overlaps an older cluster's on the same router.
	ReasonPodCIDROverlap = "PodCIDROverlap"
	// ReasonCloudUnavailable: the cloud could not be reached or read; nothing was proven either way.
	ReasonCloudUnavailable = "CloudUnavailable"
)

// Refusal is why a cluster may not act. Reason is CamelCase for the CloudVerified condition and Events
// (MissingCredentials, UntrustedNamespace, InvalidCredentials, ForeignResource, ForeignProject,
// PodCIDRTooWide, PodCIDROverlap, CloudUnavailable); Message never holds Secret contents.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return fmt.Sprintf("%s: %s", r.Reason, r.Message) }

package tenancy

import (
	"context"
	"fmt"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

// Cloud is what controllers may call in a cluster's project.
type Cloud interface {
	openstack.Routers
	openstack.Ports
	openstack.Servers
	openstack.SecurityGroups
	openstack.Volumes
	openstack.LoadBalancers
}

// Scope is a cluster's proven place in the cloud.
type Scope struct {
	// Cloud is connected with the cluster's credentials (or the operator's, in a trusted namespace).
	Cloud Cloud
	// ProjectID the credentials authenticate to; every list and write of the cluster is limited to it.
	ProjectID string
	// Source says which credentials: "secret NS/NAME key KEY" or "operator credentials".
	Source string
	// Router named by the spec, read and proven to be the project's.
	Router *openstack.Router
}

// Resolver gives each cluster its Scope, or a *Refusal.
type Resolver interface {
	Resolve(ctx context.Context, c *v1alpha1.VitalsCluster) (*Scope, error)
}

// Refusal is why a cluster may not act. Reason is CamelCase for the CloudVerified condition and Events
// (MissingCredentials, UntrustedNamespace, InvalidCredentials, ForeignResource, ForeignProject,
// PodCIDRTooWide, PodCIDROverlap, CloudUnavailable); Message never holds Secret contents.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return fmt.Sprintf("%s: %s", r.Reason, r.Message) }

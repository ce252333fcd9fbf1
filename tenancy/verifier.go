package tenancy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

// Defaults of a cluster's credentials reference.
const (
	// DefaultCloudsYAMLKey is the key of a credentials Secret that holds the clouds.yaml.
	DefaultCloudsYAMLKey = "clouds.yaml"
	// DefaultCloud is the clouds.yaml entry used when spec.openstack.cloud is empty.
	DefaultCloud = "openstack"
)

// Options configure a Verifier.
type Options struct {
	// Secrets reads credentials Secrets with single GETs (an uncached reader: the operator never lists
	// or watches Secrets).
	Secrets client.Reader
	// Clusters lists the VitalsClusters for the overlap rule: a rule across clusters, so an uncached reader
	// (the API server), never the manager's cache, which with sharding holds one replica's clusters only. The
	// list is read in pages of ClustersPage.
	Clusters client.Reader
	// ClustersByRouter: Clusters holds the field index IndexRouter (RouterIndex), and the overlap rule
	// lists the clusters of the resolved cluster's router only (a cluster-wide index, for tests and
	// embedders whose cache holds every cluster; never a shard's cache).
	ClustersByRouter bool
	// Connect connects with a Secret's credentials (default: openstack.Connect).
	Connect ConnectFunc
	// Operator returns the operator's own connection (nil: the operator has no credentials).
	Operator func(ctx context.Context) (Connection, error)
	// TrustedNamespaces may use the operator's credentials; no other namespace can (default: none).
	TrustedNamespaces []string
	// TrustedAuthURLs are Keystone URL prefixes the operator trusts, with their catalogs, e.g.
	// "https://keystone.example.com:5000/v3". A Secret's auth_url outside them is connected to only
	// over public addresses: never loopback, link-local or multicast. Empty: no URL is trusted so.
	TrustedAuthURLs []string
	// Limits of pod CIDRs.
	Limits Limits
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// SecretMaxAge: a credentials Secret read less than this long ago is not read again, its cached
	// connection serves (0: every resolution reads it). The operator sets its access interval: a rotated
	// or deleted Secret takes effect within it, as documented, and the passes of routegc and flight do
	// not each cost a GET, which the client's rate limit would make every other pass wait for
	// (docs/benchmarks.md, issue 17).
	SecretMaxAge time.Duration
	// ClustersMaxAge: the overlap rule's cluster-wide list of VitalsClusters read less than this long ago
	// serves every resolution (0: each reads it). A cluster-wide list for every pass of every controller
	// costs the API server O(clusters²) (docs/benchmarks.md, "Operator at scale": 10 lists of 1000 clusters a
	// second held every pass for 10 s); a list at most this old misses only a cluster created, proven or
	// changed within it, and a newer cluster never pushes out an older one (CheckOverlap).
	ClustersMaxAge time.Duration
	// Clock measures SecretMaxAge and ClustersMaxAge (default the real clock).
	Clock clock.PassiveClock
}

// Verifier is the Resolver: it connects each cluster with its own credentials (cached per Secret
// version), proves every resource its spec names, and applies the pod CIDR rules.
type Verifier struct {
	opts Options

	mu    sync.Mutex
	conns map[string]*cachedConn          // by Secret reference (namespace/name/key/cloud)
	uses  map[types.NamespacedName]string // the reference each cluster uses

	clusters clusterSnapshot // the overlap rule's list, ClustersMaxAge at most
}

type cachedConn struct {
	version string // Secret UID/resourceVersion
	conn    Connection
	readAt  time.Time // when its Secret was last read

	meta connMeta
}

// connMeta is when a connection first authenticated, and the resourceVersion of the Secret it was made from.
type connMeta struct {
	at      time.Time
	version string
}

var _ Resolver = (*Verifier)(nil)

// NewVerifier returns a Verifier.
func NewVerifier(o Options) *Verifier {
	if o.Connect == nil {
		o.Connect = func(ctx context.Context, a openstack.Auth, tr http.RoundTripper) (Connection, error) {
			return openstack.Connect(ctx, openstack.Config{Auth: a, Transport: tr})
		}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Limits = o.Limits.withDefaults()
	return &Verifier{opts: o, conns: map[string]*cachedConn{}, uses: map[types.NamespacedName]string{}}
}

// Resolve proves c's place in the cloud, or refuses it. Local rules come first (no cloud call for a
// spec that cannot pass), then the credentials, the project, and every resource the spec names.
func (v *Verifier) Resolve(ctx context.Context, c *v1alpha1.VitalsCluster) (*Scope, error) {
	if err := CheckWidth(c, v.opts.Limits); err != nil {
		return nil, err
	}
	conn, source, cm, err := v.connection(ctx, c)
	if err != nil {
		return nil, err
	}
	project := conn.ProjectID()
	if project == "" {
		return nil, &Refusal{Reason: ReasonInvalidCredentials, Message: source + ": the credentials are not scoped to a project (expected project_id or project_name)"}
	}
	if p := c.Spec.OpenStack.ProjectID; p != "" && p != project {
		return nil, &Refusal{Reason: ReasonForeignProject, Message: fmt.Sprintf("spec.openstack.projectID %s is not the project %s of %s", p, project, source)}
	}
	if v.opts.Clusters != nil {
		others, err := v.clustersOfRouter(ctx, c.Spec.OpenStack.RouterID)
		if err != nil {
			return nil, fmt.Errorf("list clusters for the pod CIDR overlap rule: %w", err)
		}
		if err := CheckOverlap(c, project, others); err != nil {
			return nil, err
		}
	}
	// A cluster being deleted, proven in this project with its spec of now: its owner may have deleted its
	// router, network or subnet already (CAPO deletes the router first, and the network last), and deorbit
	// still has the project's volumes and load balancers to delete.
	scope, err := scopeFor(ctx, conn, project, c.Spec.OpenStack, source, provenBeforeDeletion(c, project))
	if r := reauthRefusal(source, err); r != nil {
		return nil, r
	}
	if scope != nil {
		scope.ConnectedAt, scope.SecretVersion = cm.at, cm.version
		scope.Keystone = v.keystone(conn, cm)
	}
	return scope, err
}

// keystone is the Keystone conn authenticated to (nil when conn cannot tell its endpoint): trusted when it is the
// operator's own connection (no Secret version) or a trusted prefix, as the cluster's own connection was.
func (v *Verifier) keystone(conn Connection, cm connMeta) *Keystone {
	ac, ok := conn.(interface{ Auth() openstack.Auth })
	if !ok {
		return nil
	}
	a := ac.Auth()
	trusted := cm.version == "" || trustedAuthURL(a.Options.IdentityEndpoint, v.opts.TrustedAuthURLs)
	return NewKeystone(a, trusted, v.opts.Connect)
}

// provenBeforeDeletion reports whether c is being deleted and was proven in project with the spec it has now:
// status.projectID is project and its CloudVerified condition is True for the generation before its deletion
// (which bumps the generation once) or a later one. A resource of its spec the project no longer shows is
// then gone with the cluster's teardown: to a project's own credentials another project's resource looks
// the same (Neutron answers 404), so a spec changed since the proof is never trusted so.
func provenBeforeDeletion(c *v1alpha1.VitalsCluster, project string) bool {
	if c.DeletionTimestamp.IsZero() || c.Status.ProjectID != project {
		return false
	}
	cd := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCloudVerified)
	return cd != nil && cd.Status == metav1.ConditionTrue && cd.ObservedGeneration >= c.Generation-1
}

// ScopeOf proves what the credentials of conn act in, without a VitalsCluster (the `vitals deorbit`
// command): their project (which spec.ProjectID, when set, must be) and every resource spec names (the router,
// the nodes' subnet). An empty spec.RouterID proves no router: the Scope's Router is nil and every router write is
// refused.
func ScopeOf(ctx context.Context, conn Connection, spec v1alpha1.OpenStackSpec, source string) (*Scope, error) {
	project := conn.ProjectID()
	if project == "" {
		return nil, &Refusal{Reason: ReasonInvalidCredentials, Message: source + ": the credentials are not scoped to a project (expected project_id or project_name)"}
	}
	if p := spec.ProjectID; p != "" && p != project {
		return nil, &Refusal{Reason: ReasonForeignProject, Message: fmt.Sprintf("projectID %s is not the project %s of %s", p, project, source)}
	}
	if spec.RouterID == "" && spec.SubnetID == "" && spec.NetworkID == "" {
		return &Scope{Cloud: &scoped{conn: conn, project: project}, ProjectID: project, Source: source}, nil
	}
	return scopeFor(ctx, conn, project, spec, source, false)
}

// scopeFor proves the resources spec names in project and returns the Scope limited to them. With
// toleratingGone, a resource the project no longer shows is gone rather than foreign (Scope.Gone); a router
// gone leaves the Scope without one, and every router write is refused.
func scopeFor(ctx context.Context, conn Connection, project string, spec v1alpha1.OpenStackSpec, source string, toleratingGone bool) (*Scope, error) {
	router, subnet, gone, err := prove(ctx, conn, project, spec, toleratingGone)
	if err != nil {
		return nil, err
	}
	sc := &scoped{conn: conn, project: project}
	if router != nil {
		sc.router = router.ID
	}
	scope := &Scope{Cloud: sc, ProjectID: project, Source: source, Router: router, Subnet: subnet, Gone: gone}
	if cr, ok := conn.(CredentialReader); ok {
		scope.Credentials = cr
	}
	return scope, nil
}

// Forget drops the connection of a cluster that is gone, unless another cluster uses the same Secret.
func (v *Verifier) Forget(cluster types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.release(cluster)
}

// release drops cluster's use of its reference; the caller holds v.mu.
func (v *Verifier) release(cluster types.NamespacedName) {
	ref, ok := v.uses[cluster]
	if !ok {
		return
	}
	delete(v.uses, cluster)
	for _, r := range v.uses {
		if r == ref {
			return
		}
	}
	delete(v.conns, ref)
}

// Cached reports how many connections are cached (for tests and metrics).
func (v *Verifier) Cached() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.conns)
}

// connection returns c's connection and a description of its credentials for messages.
func (v *Verifier) connection(ctx context.Context, c *v1alpha1.VitalsCluster) (Connection, string, connMeta, error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	ref := c.Spec.OpenStack.CredentialsSecretRef
	if ref == nil {
		v.mu.Lock()
		v.release(key)
		v.mu.Unlock()
		return v.operatorConnection(ctx, c)
	}
	secretKey := ref.Key
	if secretKey == "" {
		secretKey = DefaultCloudsYAMLKey
	}
	cloud := c.Spec.OpenStack.Cloud
	if cloud == "" {
		cloud = DefaultCloud
	}
	source := fmt.Sprintf("secret %s/%s key %s", c.Namespace, ref.Name, secretKey)
	id := c.Namespace + "/" + ref.Name + "/" + secretKey + "/" + cloud + "/" + c.Spec.OpenStack.CACertKey
	if conn, meta, ok := v.fresh(key, id); ok {
		return conn, source + " (cloud " + cloud + ")", meta, nil
	}
	readAt := v.opts.Clock.Now()
	var sec corev1.Secret
	if err := v.opts.Secrets.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", connMeta{}, &Refusal{Reason: ReasonMissingCredentials, Message: fmt.Sprintf("secret %s/%s not found (spec.openstack.credentialsSecretRef)", c.Namespace, ref.Name)}
		}
		if apierrors.IsForbidden(err) {
			// Not an outage: the operator's RBAC does not reach this namespace's Secrets.
			return nil, "", connMeta{}, &Refusal{Reason: ReasonMissingCredentials, Message: fmt.Sprintf(
				"secret %s/%s: the operator may not read Secrets in namespace %s (grant it: the chart's operator.secrets.namespaces, or operator.secrets.clusterWide)",
				c.Namespace, ref.Name, c.Namespace)}
		}
		return nil, "", connMeta{}, fmt.Errorf("read credentials secret %s/%s: %w", c.Namespace, ref.Name, err)
	}
	data, ok := sec.Data[secretKey]
	if !ok {
		return nil, "", connMeta{}, &Refusal{Reason: ReasonInvalidCredentials, Message: source + ": no such key (expected a clouds.yaml)"}
	}
	version := string(sec.UID) + "/" + sec.ResourceVersion
	v.mu.Lock()
	if prev, ok := v.uses[key]; ok && prev != id {
		v.release(key)
	}
	v.uses[key] = id
	if e, ok := v.conns[id]; ok && e.version == version {
		e.readAt = readAt
		v.mu.Unlock()
		return e.conn, source + " (cloud " + cloud + ")", e.meta, nil
	}
	v.mu.Unlock()

	var caPEM string
	if k := c.Spec.OpenStack.CACertKey; k != "" {
		caPEM = string(sec.Data[k]) // optional, as in CAPO's identity Secret
	}
	auth, err := openstack.AuthFromSecretCloudsYAMLWithCA(data, cloud, source, caPEM)
	if err != nil {
		// The parser's errors name the Secret, the line and the field, never a value.
		return nil, "", connMeta{}, &Refusal{Reason: ReasonInvalidCredentials, Message: err.Error()}
	}
	source = auth.Source
	var tr *guardedTransport
	var rt http.RoundTripper
	if !trustedAuthURL(auth.Options.IdentityEndpoint, v.opts.TrustedAuthURLs) {
		tr = newGuardedTransport(auth.TLS)
		rt = tr
	}
	conn, err := v.opts.Connect(ctx, auth, rt)
	if err != nil {
		refusal := connectError(source, err, tr != nil && tr.denied.Load())
		v.opts.Logger.Info("cannot connect with a cluster's credentials", "cluster", key.String(), "reason", refusal.Reason, "message", refusal.Message)
		return nil, "", connMeta{}, refusal
	}
	meta := connMeta{at: v.opts.Clock.Now(), version: sec.ResourceVersion}
	v.mu.Lock()
	if v.uses[key] == id {
		v.conns[id] = &cachedConn{version: version, conn: conn, readAt: readAt, meta: meta}
	}
	v.mu.Unlock()
	return conn, source, meta, nil
}

// fresh returns the cached connection of reference id when its Secret was read less than SecretMaxAge
// ago, and records that cluster key uses it.
func (v *Verifier) fresh(key types.NamespacedName, id string) (Connection, connMeta, bool) {
	if v.opts.SecretMaxAge <= 0 {
		return nil, connMeta{}, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.conns[id]
	if !ok || v.opts.Clock.Since(e.readAt) >= v.opts.SecretMaxAge {
		return nil, connMeta{}, false
	}
	if prev, ok := v.uses[key]; ok && prev != id {
		v.release(key)
	}
	v.uses[key] = id
	return e.conn, e.meta, true
}

// operatorConnection serves a cluster without a Secret with the operator's credentials, in a trusted
// namespace only.
func (v *Verifier) operatorConnection(ctx context.Context, c *v1alpha1.VitalsCluster) (Connection, string, connMeta, error) {
	const source = "the operator's credentials"
	switch {
	case v.opts.Operator == nil:
		return nil, "", connMeta{}, &Refusal{Reason: ReasonMissingCredentials, Message: "no spec.openstack.credentialsSecretRef, and the operator has no credentials of its own"}
	case !slices.Contains(v.opts.TrustedNamespaces, c.Namespace):
		return nil, "", connMeta{}, &Refusal{Reason: ReasonUntrustedNamespace, Message: fmt.Sprintf(
			"no spec.openstack.credentialsSecretRef, and namespace %s is not trusted with the operator's credentials: name a credentials Secret", c.Namespace)}
	}
	conn, err := v.opts.Operator(ctx)
	if err != nil {
		return nil, "", connMeta{}, &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: %v", source, err)}
	}
	return conn, source, connMeta{}, nil // the operator's own connection: re-authenticated by gophercloud, no Secret version
}

// Prove reads every resource spec names and proves it is project's: the router (returned), the
// network, the subnet (on that network) and the security group (exactly one of that name in the
// project). A resource that is absent, or of another project, is a ForeignResource refusal that names
// its type and ID only; a failed read is an error.
func Prove(ctx context.Context, cloud provable, project string, spec v1alpha1.OpenStackSpec) (*openstack.Router, error) {
	router, _, _, err := prove(ctx, cloud, project, spec, false)
	return router, err
}

type provable interface {
	openstack.Routers
	openstack.Networks
	openstack.SecurityGroups
}

// prove is Prove, and returns the subnet spec names too (nil: none, or gone); with toleratingGone, a resource
// the project does not show (absent: a router, network or subnet read answers 404, no security group of the
// name) is listed in gone instead of refused (a router gone: the router returned is nil). A resource of
// another project is refused either way.
func prove(ctx context.Context, cloud provable, project string, spec v1alpha1.OpenStackSpec, toleratingGone bool) (*openstack.Router, *openstack.Subnet, []string, error) {
	var gone []string
	foreign := func(kind, id string) error {
		return &Refusal{Reason: ReasonForeignResource, Message: fmt.Sprintf("%s %s is not in project %s", kind, id, project)}
	}
	// absent is a resource the project does not show: gone when tolerated, else foreign.
	absent := func(kind, id string) error {
		if toleratingGone {
			gone = append(gone, kind+" "+id)
			return nil
		}
		return foreign(kind, id)
	}
	var router *openstack.Router
	if spec.RouterID != "" { // `vitals deorbit` without --router: no router, none proven
		r, err := cloud.GetRouter(ctx, spec.RouterID)
		switch {
		case openstack.IsNotFound(err):
			if err := absent("router", spec.RouterID); err != nil {
				return nil, nil, nil, err
			}
		case err != nil:
			return nil, nil, nil, fmt.Errorf("prove router %s: %w", spec.RouterID, err)
		case r.ProjectID != project:
			return nil, nil, nil, foreign("router", spec.RouterID)
		default:
			router = r
		}
	}
	if spec.NetworkID != "" {
		n, err := cloud.GetNetwork(ctx, spec.NetworkID)
		switch {
		case openstack.IsNotFound(err):
			if err := absent("network", spec.NetworkID); err != nil {
				return nil, nil, nil, err
			}
		case err != nil:
			return nil, nil, nil, fmt.Errorf("prove network %s: %w", spec.NetworkID, err)
		case n.ProjectID != project:
			return nil, nil, nil, foreign("network", spec.NetworkID)
		}
	}
	var subnet *openstack.Subnet
	if spec.SubnetID != "" {
		s, err := cloud.GetSubnet(ctx, spec.SubnetID)
		switch {
		case openstack.IsNotFound(err):
			if err := absent("subnet", spec.SubnetID); err != nil {
				return nil, nil, nil, err
			}
			s = nil
		case err != nil:
			return nil, nil, nil, fmt.Errorf("prove subnet %s: %w", spec.SubnetID, err)
		case s.ProjectID != project:
			return nil, nil, nil, foreign("subnet", spec.SubnetID)
		case spec.NetworkID != "" && s.NetworkID != spec.NetworkID:
			return nil, nil, nil, &Refusal{Reason: ReasonForeignResource, Message: fmt.Sprintf("subnet %s is not on network %s", spec.SubnetID, spec.NetworkID)}
		}
		subnet = s
	}
	if name := spec.SecurityGroupName; name != "" {
		gs, err := cloud.ListSecurityGroups(ctx, openstack.ListOpts{Name: name, ProjectID: project})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("prove security group %q: %w", name, err)
		}
		var ids []string
		for _, g := range gs {
			if g.ProjectID == project && g.Name == name {
				ids = append(ids, g.ID)
			}
		}
		switch {
		case len(ids) == 0 && toleratingGone:
			gone = append(gone, fmt.Sprintf("security group %q", name))
		case len(ids) != 1:
			return nil, nil, nil, &Refusal{Reason: ReasonForeignResource, Message: fmt.Sprintf(
				"security group named %q: %d in project %s (expected exactly one)", name, len(ids), project)}
		}
	}
	return router, subnet, gone, nil
}

// ClustersPage is the most VitalsClusters one page of the overlap rule's list holds.
const ClustersPage = 500

// clustersOfRouter lists every VitalsCluster on router, completely (a failed page fails the list: a partial
// list is never taken for the whole).
func (v *Verifier) clustersOfRouter(ctx context.Context, router string) ([]v1alpha1.VitalsCluster, error) {
	if v.opts.ClustersByRouter {
		var list v1alpha1.VitalsClusterList
		if err := v.opts.Clusters.List(ctx, &list, client.MatchingFields{IndexRouter: router}); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	all, err := v.clusters.get(ctx, v.opts.Clusters, v.opts.Clock.Now, v.opts.ClustersMaxAge)
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.VitalsCluster
	for i := range all {
		if all[i].Spec.OpenStack.RouterID == router {
			out = append(out, all[i])
		}
	}
	return out, nil
}

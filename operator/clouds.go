package operator

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// ConnectFunc connects to one cloud.
type ConnectFunc func(ctx context.Context, a openstack.Auth) (*openstack.Cloud, error)

// DefaultConnect connects with openstack.Connect, registering request metrics on reg.
func DefaultConnect(reg prometheus.Registerer, log *slog.Logger) ConnectFunc {
	return func(ctx context.Context, a openstack.Auth) (*openstack.Cloud, error) {
		return openstack.Connect(ctx, openstack.Config{Auth: a, Registerer: reg, Logger: log})
	}
}

// lazyCloud connects in the background, on first use and again after a failure (not more often
// than retry), so that the operator starts, and reports not ready, while Keystone is down; and so
// that a check's short timeout never cuts an authentication that is merely slow.
type lazyCloud struct {
	auth    openstack.Auth
	connect ConnectFunc
	clock   clock.PassiveClock
	retry   time.Duration
	// timeout of one connection attempt (default 1m).
	timeout time.Duration

	mu         sync.Mutex
	cloud      *openstack.Cloud
	err        error
	lastTry    time.Time
	connecting chan struct{} // closed when the attempt in flight ends; nil when none
}

// get returns the cloud, or the reason there is none yet. It starts a connection attempt when none
// runs and the last one is older than retry, and waits for it at most until ctx ends.
func (l *lazyCloud) get(ctx context.Context) (*openstack.Cloud, error) {
	l.mu.Lock()
	if l.cloud != nil {
		l.mu.Unlock()
		return l.cloud, nil
	}
	if l.connecting == nil && (l.lastTry.IsZero() || l.clock.Since(l.lastTry) >= l.retry) {
		l.lastTry = l.clock.Now()
		done := make(chan struct{})
		l.connecting = done
		go l.attempt(done)
	}
	wait := l.connecting
	l.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to OpenStack (%s): still authenticating", l.auth.Source)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cloud != nil {
		return l.cloud, nil
	}
	if l.err == nil {
		return nil, fmt.Errorf("connect to OpenStack (%s): not connected yet", l.auth.Source)
	}
	return nil, l.err
}

func (l *lazyCloud) attempt(done chan struct{}) {
	timeout := l.timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := l.connect(ctx, l.auth)
	l.mu.Lock()
	if err != nil {
		l.err = fmt.Errorf("connect to OpenStack (%s): %w", l.auth.Source, err)
	} else {
		l.cloud, l.err = c, nil
	}
	l.connecting = nil
	l.mu.Unlock()
	close(done)
}

// clusterClouds gives each Cluster its cloud: the operator's default, or one connected with the
// clouds.yaml of the Cluster's credentials Secret (cached per Secret version).
type clusterClouds struct {
	reader  client.Reader // uncached: the operator never lists or watches Secrets
	def     *lazyCloud
	connect ConnectFunc

	mu    sync.Mutex
	cache map[string]cachedCloud
}

type cachedCloud struct {
	version string
	cloud   *openstack.Cloud
}

// DefaultCloudsYAMLKey is the key of a credentials Secret that holds the clouds.yaml.
const DefaultCloudsYAMLKey = "clouds.yaml"

// DefaultKubeconfigKey is the key of a kubeconfig Secret.
const DefaultKubeconfigKey = "kubeconfig"

// Forget drops nothing yet: connected clouds are cached per Secret.
func (cc *clusterClouds) Forget(types.NamespacedName) {}

// Resolve gives c its cloud, project and router; a router of another project is refused.
func (cc *clusterClouds) Resolve(ctx context.Context, c *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	cloud, err := cc.cloudOf(ctx, c)
	if err != nil {
		return nil, err
	}
	project := cloud.ProjectID()
	if project == "" {
		return nil, &tenancy.Refusal{Reason: "InvalidCredentials", Message: "the credentials are not scoped to a project"}
	}
	if p := c.Spec.OpenStack.ProjectID; p != "" && p != project {
		return nil, &tenancy.Refusal{Reason: "ForeignProject", Message: fmt.Sprintf("spec.openstack.projectID %s is not the credentials' project %s", p, project)}
	}
	router, err := cloud.GetRouter(ctx, c.Spec.OpenStack.RouterID)
	if err != nil {
		return nil, err
	}
	if router.ProjectID != project {
		return nil, &tenancy.Refusal{Reason: "ForeignResource", Message: fmt.Sprintf("router %s does not belong to project %s", router.ID, project)}
	}
	return &tenancy.Scope{Cloud: cloud, ProjectID: project, Source: cloud.Auth().Source, Router: router}, nil
}

func (cc *clusterClouds) cloudOf(ctx context.Context, c *v1alpha1.VitalsCluster) (*openstack.Cloud, error) {
	ref := c.Spec.OpenStack.CredentialsSecretRef
	if ref == nil {
		if cc.def == nil {
			return nil, &tenancy.Refusal{Reason: "MissingCredentials", Message: "set spec.openstack.credentialsSecretRef"}
		}
		return cc.def.get(ctx)
	}
	key := ref.Key
	if key == "" {
		key = DefaultCloudsYAMLKey
	}
	var sec corev1.Secret
	if err := cc.reader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}, &sec); err != nil {
		return nil, fmt.Errorf("read credentials secret %s/%s: %w", c.Namespace, ref.Name, err)
	}
	data, ok := sec.Data[key]
	if !ok {
		return nil, fmt.Errorf("credentials secret %s/%s has no key %q (expected a clouds.yaml)", c.Namespace, ref.Name, key)
	}
	cloudName := c.Spec.OpenStack.Cloud
	if cloudName == "" {
		cloudName = "openstack"
	}
	id := c.Namespace + "/" + ref.Name + "/" + key + "/" + cloudName
	version := string(sec.UID) + "/" + sec.ResourceVersion
	cc.mu.Lock()
	if e, ok := cc.cache[id]; ok && e.version == version {
		cc.mu.Unlock()
		return e.cloud, nil
	}
	cc.mu.Unlock()
	auth, err := authFromCloudsYAMLBytes(data, cloudName, fmt.Sprintf("secret %s/%s key %s", c.Namespace, ref.Name, key))
	if err != nil {
		return nil, err
	}
	cloud, err := cc.connect(ctx, auth)
	if err != nil {
		return nil, fmt.Errorf("connect with credentials secret %s/%s (cloud %s): %w", c.Namespace, ref.Name, cloudName, err)
	}
	cc.mu.Lock()
	if cc.cache == nil {
		cc.cache = map[string]cachedCloud{}
	}
	cc.cache[id] = cachedCloud{version: version, cloud: cloud}
	cc.mu.Unlock()
	return cloud, nil
}

// authFromCloudsYAMLBytes parses a clouds.yaml held in memory (via a private temporary file, which
// the parser needs) and selects one cloud.
func authFromCloudsYAMLBytes(data []byte, cloud, source string) (openstack.Auth, error) {
	dir, err := os.MkdirTemp("", "vitals-clouds-")
	if err != nil {
		return openstack.Auth{}, fmt.Errorf("parse clouds.yaml from %s: %w", source, err)
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "clouds.yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return openstack.Auth{}, fmt.Errorf("parse clouds.yaml from %s: %w", source, err)
	}
	a, err := openstack.AuthFromCloudsYAML(openstack.CloudsYAMLOptions{Cloud: cloud, Paths: []string{p}, Getenv: func(string) string { return "" }})
	if err != nil {
		return openstack.Auth{}, fmt.Errorf("clouds.yaml from %s: %w", source, err)
	}
	a.Source = fmt.Sprintf("clouds.yaml from %s (cloud %s)", source, cloud)
	return a, nil
}

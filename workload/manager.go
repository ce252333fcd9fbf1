package workload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/remediation"
)

// DefaultKubeconfigKey is the key of a kubeconfig Secret when the reference names none.
const DefaultKubeconfigKey = "kubeconfig"

// Options configure a Manager. The zero value of each field takes the default noted.
type Options struct {
	// Secrets reads the kubeconfig Secrets, one GET each (required; an uncached reader: the operator
	// never lists or watches Secrets).
	Secrets client.Reader
	// Checks receives each cluster's remediation.CheckWorkload result (required).
	Checks remediation.Checks
	// Changed is told, from a background goroutine, when a cluster's health changes (nil: nobody).
	Changed func(types.NamespacedName)

	// AllowLocal lets a VitalsCluster without kubeconfigSecretRef use Local, the cluster the operator runs
	// in (default: such clusters get ReasonLocalNotAllowed).
	AllowLocal bool
	Local      *rest.Config
	// Rules for the tenants' kubeconfigs.
	Rules KubeconfigRules
	// Limits per workload cluster.
	Limits Limits

	// HealthInterval and HealthTimeout of each cluster's probe (default 10s and 5s).
	HealthInterval, HealthTimeout time.Duration
	// SecretRecheck: For reads a cluster's Secret again once its last read is this old (default 1m;
	// negative: on every call). A changed reference is read at once.
	SecretRecheck time.Duration

	// Scheme of the objects read from workload clusters (default: client-go's built-in kinds).
	Scheme *runtime.Scheme
	// UserAgent of the requests (default "vitals-operator").
	UserAgent string
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Logger (default slog.Default()). Nothing of a Secret is logged.
	Logger *slog.Logger
	// Clock of the health loops (default the real one).
	Clock clock.WithTicker
	// Rand draws the jitter of the health loops' waits (nil: math/rand).
	Rand backoff.Rand
}

func (o *Options) defaults() {
	o.Limits.defaults()
	if o.HealthInterval <= 0 {
		o.HealthInterval = 10 * time.Second
	}
	if o.HealthTimeout <= 0 {
		o.HealthTimeout = 5 * time.Second
	}
	if o.HealthTimeout > o.HealthInterval {
		o.HealthTimeout = o.HealthInterval
	}
	if o.SecretRecheck == 0 {
		o.SecretRecheck = time.Minute
	}
	if o.Scheme == nil {
		o.Scheme = runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(o.Scheme)
	}
	if o.UserAgent == "" {
		o.UserAgent = "vitals-operator"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Manager is the Access of the operator: one remote access per VitalsCluster. It is a manager.Runnable
// that stops every access when the operator stops.
type Manager struct {
	opts    Options
	log     *slog.Logger
	logr    logr.Logger
	metrics *metrics

	ctx    context.Context // parent of every access
	cancel context.CancelFunc

	mu     sync.Mutex
	slots  map[types.NamespacedName]*slot
	closed bool
}

// slot holds one VitalsCluster's access; its mutex serialises For and Forget of that cluster.
type slot struct {
	mu      sync.Mutex
	gone    bool // forgotten: For must take a new slot
	cur     *remote
	ident   string // the VitalsCluster's UID and reference the access was built for
	checked time.Time
}

var (
	_ Access                                    = (*Manager)(nil)
	_ manager.LeaderElectionRunnable            = (*Manager)(nil)
	_ interface{ Start(context.Context) error } = (*Manager)(nil)
)

// NewManager returns a Manager; nothing connects until For.
func NewManager(opts Options) (*Manager, error) {
	if opts.Secrets == nil || opts.Checks == nil {
		return nil, errors.New("workload: Options.Secrets and Options.Checks are required")
	}
	if opts.AllowLocal && opts.Local == nil {
		return nil, errors.New("workload: AllowLocal needs Options.Local")
	}
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, log: opts.Logger, logr: logr.FromSlogHandler(opts.Logger.Handler()),
		metrics: newMetrics(opts.Registerer), ctx: ctx, cancel: cancel, slots: map[types.NamespacedName]*slot{}}, nil
}

// Start waits for ctx to end, then stops every access (Close).
func (m *Manager) Start(ctx context.Context) error {
	<-ctx.Done()
	m.Close()
	return nil
}

// NeedLeaderElection is false: the Manager only holds accesses, which controllers (leaders) ask for;
// it stops after them.
func (m *Manager) NeedLeaderElection() bool { return false }

// Close stops every access and refuses new ones.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	keys := make([]types.NamespacedName, 0, len(m.slots))
	for k := range m.slots {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	for _, k := range keys {
		m.Forget(k)
	}
	m.cancel()
}

// Len is the number of running accesses.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.slots {
		s.mu.Lock()
		if s.cur != nil {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// Forget stops the access of key and waits for its goroutines; its check reports ReasonStopped.
func (m *Manager) Forget(key types.NamespacedName) {
	m.mu.Lock()
	s := m.slots[key]
	delete(m.slots, key)
	m.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	if s.cur != nil {
		m.stopLocked(s, key, "forgotten")
		m.opts.Checks.Set(key, remediation.CheckWorkload, errorf(ReasonStopped, "the access to the workload cluster was stopped"))
	}
	m.metrics.forget(key)
}

// For implements Access.
func (m *Manager) For(ctx context.Context, c *v1alpha1.VitalsCluster) (Cluster, error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, errorf(ReasonStopped, "the operator is stopping")
		}
		s := m.slots[key]
		if s == nil {
			s = &slot{}
			m.slots[key] = s
		}
		m.mu.Unlock()
		s.mu.Lock()
		if s.gone {
			s.mu.Unlock()
			continue
		}
		cl, err := m.forLocked(ctx, s, key, c)
		s.mu.Unlock()
		return cl, err
	}
}

func (m *Manager) forLocked(ctx context.Context, s *slot, key types.NamespacedName, c *v1alpha1.VitalsCluster) (Cluster, error) {
	ref := c.Spec.KubeconfigSecretRef
	ident := string(c.UID) + " local"
	if ref != nil {
		ident = fmt.Sprintf("%s secret %s key %s", c.UID, ref.Name, keyOf(ref))
	}
	now := m.opts.Clock.Now()
	fresh := m.opts.SecretRecheck > 0 && now.Sub(s.checked) < m.opts.SecretRecheck
	if s.cur != nil && s.ident == ident && (ref == nil || fresh) {
		return s.cur, nil
	}
	var (
		cfg     *rest.Config
		source  string
		version string
	)
	if ref == nil {
		if !m.opts.AllowLocal {
			return nil, m.fail(s, key, ident, errorf(ReasonLocalNotAllowed,
				"spec.kubeconfigSecretRef is empty and the operator does not serve the cluster it runs in (--allow-local-workload)"))
		}
		cfg, source, version = m.opts.Local, "the operator's own cluster", "local"
	} else {
		k := keyOf(ref)
		source = fmt.Sprintf("secret %s/%s key %s", c.Namespace, ref.Name, k)
		var sec corev1.Secret
		err := m.opts.Secrets.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}, &sec)
		switch {
		case apierrors.IsNotFound(err):
			return nil, m.fail(s, key, ident, errorf(ReasonMissingKubeconfig, "secret %s/%s does not exist", c.Namespace, ref.Name))
		case apierrors.IsForbidden(err):
			// Not an outage: the operator's RBAC does not reach this namespace's Secrets.
			return nil, m.fail(s, key, ident, errorf(ReasonMissingKubeconfig,
				"secret %s/%s: the operator may not read Secrets in namespace %s (grant it: the chart's operator.secrets.namespaces, or operator.secrets.clusterWide)",
				c.Namespace, ref.Name, c.Namespace))
		case err != nil:
			// The management API failed: keep the access there is, and say so.
			return nil, fmt.Errorf("read kubeconfig secret %s/%s: %w", c.Namespace, ref.Name, err)
		}
		data, ok := sec.Data[k]
		if !ok {
			return nil, m.fail(s, key, ident, errorf(ReasonMissingKubeconfig, "secret %s/%s has no key %q (expected a kubeconfig)", c.Namespace, ref.Name, k))
		}
		version = string(sec.UID) + "/" + sec.ResourceVersion
		if s.cur != nil && s.ident == ident && s.cur.version == version {
			s.checked = now
			return s.cur, nil
		}
		cfg, err = ParseKubeconfig(data, m.opts.Rules)
		if err != nil {
			var we *Error
			if errors.As(err, &we) {
				we.Message = source + ": " + we.Message
			}
			return nil, m.fail(s, key, ident, err)
		}
	}
	m.stopLocked(s, key, "replaced")
	var tenant *KubeconfigRules
	if ref != nil {
		tenant = &m.opts.Rules
	}
	conn, err := connect(cfg, m.opts.Limits, tenant, m.opts.UserAgent)
	if err != nil {
		return nil, m.fail(s, key, ident, err)
	}
	r, err := start(m.ctx, m, key, source, version, conn)
	if err != nil {
		conn.close()
		return nil, m.fail(s, key, ident, err)
	}
	s.cur, s.ident, s.checked = r, ident, now
	m.metrics.accesses.Inc()
	m.log.Info("workload access started", "vitalscluster", key.String(), "source", source)
	// Give the caller a first answer: wait for the first probe, at most its timeout and a little.
	wait, cancel := context.WithTimeout(ctx, m.opts.HealthTimeout+time.Second)
	defer cancel()
	select {
	case <-r.probed:
	case <-wait.Done():
	}
	return r, nil
}

// fail stops the access a cluster had, records err as its check, and returns err.
func (m *Manager) fail(s *slot, key types.NamespacedName, ident string, err error) error {
	m.stopLocked(s, key, ReasonOf(err))
	s.ident, s.checked = ident, time.Time{}
	m.opts.Checks.Set(key, remediation.CheckWorkload, err)
	m.metrics.report(key, err)
	return err
}

func (m *Manager) stopLocked(s *slot, key types.NamespacedName, why string) {
	if s.cur == nil {
		return
	}
	s.cur.stop()
	s.cur = nil
	m.metrics.accesses.Dec()
	m.log.Info("workload access stopped", "vitalscluster", key.String(), "why", why)
}

func keyOf(ref *v1alpha1.SecretKeyRef) string {
	if ref.Key == "" {
		return DefaultKubeconfigKey
	}
	return ref.Key
}

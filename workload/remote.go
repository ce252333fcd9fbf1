package workload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/vitalsproject/vitals/fencing"
	kchecks "github.com/vitalsproject/vitals/health/checks/kubernetes"
	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/remediation"
)

// remote is the access to one workload cluster: a controller-runtime cluster (cache + clients) and a
// health loop, both on a context of their own that Forget (or a new kubeconfig) cancels.
type remote struct {
	key     types.NamespacedName
	source  string
	version string
	conn    *connection
	probe   func(context.Context) error
	cluster cluster.Cluster
	reader  *trackingReader
	client  client.Client
	scheme  *runtime.Scheme
	mapper  meta.RESTMapper
	lim     Limits

	teardownOnce sync.Once
	teardown     client.Client
	teardownErr  error

	cancel context.CancelFunc
	done   chan struct{} // closed once every goroutine of the access has ended
	probed chan struct{} // closed after the first probe

	mu     sync.Mutex
	health error
}

var _ Cluster = (*remote)(nil)

func (r *remote) Reader() client.Reader { return r.reader }
func (r *remote) Client() client.Client { return r.client }

// Teardown makes, once, a client like Client on the same HTTP client (connections, limits of size and time) and
// REST mapper, whose rate limiter is a bucket of its own.
func (r *remote) Teardown() (client.Client, error) {
	r.teardownOnce.Do(func() {
		cfg := rest.CopyConfig(r.conn.cfg)
		cfg.QPS, cfg.Burst = r.lim.TeardownQPS, r.lim.TeardownBurst
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
		c, err := client.NewWithWatch(cfg, client.Options{HTTPClient: r.conn.http, Scheme: r.scheme, Mapper: r.mapper})
		if err != nil {
			r.teardownErr = errorf(ReasonInvalidKubeconfig, "build the teardown client of the workload cluster")
			return
		}
		r.teardown = fencing.Client(c)
	})
	return r.teardown, r.teardownErr
}
func (r *remote) Source() string        { return r.source }
func (r *remote) Done() <-chan struct{} { return r.done }

func (r *remote) Healthy() error {
	select {
	case <-r.done:
		return errorf(ReasonStopped, "the access to the workload cluster was stopped")
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.health
}

// start builds the access of conn and starts its cache and health loop under parent.
func start(parent context.Context, m *Manager, key types.NamespacedName, source, version string, conn *connection) (*remote, error) {
	lim := m.opts.Limits
	cl, err := cluster.New(conn.cfg, func(o *cluster.Options) {
		o.Scheme = m.opts.Scheme
		o.HTTPClient = conn.http
		o.MapperProvider = func(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
			return apiutil.NewDynamicRESTMapper(cfg, perGroupDiscovery(hc))
		}
		o.Logger = m.logr.WithValues("vitalscluster", key.String())
		o.Cache = cache.Options{
			// Informers hold what a controller reads, without the managed fields nobody reads.
			DefaultTransform: cache.TransformStripManagedFields(),
		}
		// Client reads uncached; Reader is the cache. Every write is sent through the fence of its
		// context (package fencing): one without a fence, or refused by it, is not sent.
		o.NewClient = func(cfg *rest.Config, co client.Options) (client.Client, error) {
			co.Cache = nil
			c, err := client.NewWithWatch(cfg, co)
			if err != nil {
				return nil, err
			}
			return fencing.Client(c), nil
		}
	})
	if err != nil {
		return nil, errorf(ReasonInvalidKubeconfig, "build the client of the workload cluster")
	}
	probe, err := newProbe(conn, m.opts.HealthInterval/2, m.opts.Clock)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	r := &remote{
		key: key, source: source, version: version, conn: conn, probe: probe, cluster: cl, client: cl.GetClient(),
		scheme: m.opts.Scheme, mapper: cl.GetRESTMapper(), lim: lim,
		reader: &trackingReader{cache: cl.GetCache(), scheme: m.opts.Scheme, timeout: lim.RequestTimeout},
		cancel: cancel, done: make(chan struct{}), probed: make(chan struct{}),
		health: errorf(ReasonConnecting, "the first probe of the API has not answered yet"),
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := cl.Start(ctx); err != nil {
			m.log.Warn("workload cache stopped", "vitalscluster", key.String(), "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		r.healthLoop(ctx, m)
	}()
	go func() {
		wg.Wait()
		conn.close()
		close(r.done)
	}()
	return r, nil
}

// stop cancels the access and waits for its goroutines.
func (r *remote) stop() {
	r.cancel()
	<-r.done
}

// healthLoop probes at once, then every HealthInterval (lengthened by up to a tenth at random, so that
// the probes of many clusters spread out), and after a failure on ProbeBackoff's jittered exponential
// steps instead; it reports each result to the checks store; a change of reason or message is passed
// to Changed.
func (r *remote) healthLoop(ctx context.Context, m *Manager) {
	bo := backoff.New(ProbeBackoff(m.opts.HealthInterval), m.opts.Rand)
	var last string
	first := true
	for {
		err := r.check(ctx, m.opts.HealthTimeout)
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.health = err
		r.mu.Unlock()
		m.opts.Checks.Set(r.key, remediation.CheckWorkload, err)
		m.metrics.report(r.key, err)
		now := fmt.Sprint(err)
		if first {
			close(r.probed)
			first = false
		}
		if now != last {
			last = now
			m.log.Info("workload cluster health", "vitalscluster", r.key.String(), "reason", ReasonOf(err), "err", err)
			if m.opts.Changed != nil {
				m.opts.Changed(r.key)
			}
		}
		if !backoff.Sleep(ctx, m.opts.Clock, probeWait(bo, m.opts.HealthInterval, m.opts.Rand, err)) {
			return
		}
	}
}

// probeWait returns the wait before the next probe after one that ended with err.
func probeWait(bo *backoff.Backoff, interval time.Duration, r backoff.Rand, err error) time.Duration {
	if err != nil {
		return bo.Next()
	}
	bo.Reset()
	return backoff.Jitter(interval, probeJitter, r)
}

// probeJitter lengthens each wait between two probes by up to this share of itself, at random.
const probeJitter = 0.1

// ProbeBackoff spaces the probes of a workload cluster that failed its last one: from the health
// interval, doubling up to four times it, each wait up to half as long again at random.
func ProbeBackoff(interval time.Duration) wait.Backoff {
	return wait.Backoff{Duration: interval, Factor: 2, Jitter: 0.5, Steps: 3, Cap: 4 * interval}
}

// check probes the API, then the informers started so far.
func (r *remote) check(ctx context.Context, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.probe(pctx); err != nil {
		return describe(err, timeout)
	}
	return r.reader.synced(pctx)
}

// trackingReader reads through the cache, bounds reads that bring no deadline, and remembers each kind
// read so that the health check can ask whether its informer has synced.
type trackingReader struct {
	cache   cache.Cache
	scheme  *runtime.Scheme
	timeout time.Duration

	mu    sync.Mutex
	kinds map[schema.GroupVersionKind]client.Object
}

func (t *trackingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	t.track(obj, false)
	ctx, cancel := t.bound(ctx)
	defer cancel()
	return t.cache.Get(ctx, key, obj, opts...)
}

func (t *trackingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	t.track(list, true)
	ctx, cancel := t.bound(ctx)
	defer cancel()
	return t.cache.List(ctx, list, opts...)
}

func (t *trackingReader) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, t.timeout)
}

// track remembers an object of obj's kind (the item kind of a list), of the same shape (typed,
// unstructured or metadata-only), for GetInformer.
func (t *trackingReader) track(obj runtime.Object, list bool) {
	gvk, err := apiutil.GVKForObject(obj, t.scheme)
	if err != nil {
		return
	}
	if list {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	var proto client.Object
	switch obj.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		proto = u
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		p := &metav1.PartialObjectMetadata{}
		p.SetGroupVersionKind(gvk)
		proto = p
	default:
		o, err := t.scheme.New(gvk)
		if err != nil {
			return
		}
		co, ok := o.(client.Object)
		if !ok {
			return
		}
		proto = co
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kinds == nil {
		t.kinds = map[schema.GroupVersionKind]client.Object{}
	}
	if _, ok := t.kinds[gvk]; !ok {
		t.kinds[gvk] = proto
	}
}

// synced is nil when every informer started by a read has synced.
func (t *trackingReader) synced(ctx context.Context) error {
	t.mu.Lock()
	protos := make(map[schema.GroupVersionKind]client.Object, len(t.kinds))
	for k, v := range t.kinds {
		protos[k] = v
	}
	t.mu.Unlock()
	synced := make(map[string]toolscache.InformerSynced, len(protos))
	for gvk, proto := range protos {
		inf, err := t.cache.GetInformer(ctx, proto, cache.BlockUntilSynced(false))
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return errorf(ReasonNotSynced, "the informers could not be checked in time")
			}
			continue // a kind the server does not serve: the read that asked for it failed already
		}
		synced[gvk.Kind] = inf.HasSynced
	}
	check, err := kchecks.InformersSynced(kchecks.InformersSyncedOptions{Informers: synced})
	if err == nil {
		err = check(ctx)
	}
	if err != nil {
		return errorf(ReasonNotSynced, "%s", err.Error())
	}
	return nil
}

package progress

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vitalsproject/vitals/health/checks"
)

// Defaults of Options.
const (
	DefaultHungAfter  = 5 * time.Minute
	DefaultStallAfter = 2 * time.Minute
)

// Options configure a Controller. Zero fields take the defaults noted.
type Options struct {
	// Workers is the controller's MaxConcurrentReconciles (default 1).
	Workers int
	// HungAfter: a reconcile running longer is hung (default DefaultHungAfter).
	HungAfter time.Duration
	// StallAfter: ready requests that no worker takes for this long, while none runs, stall the
	// queue (default DefaultStallAfter).
	StallAfter time.Duration
	// Log is given to the queue (default: none).
	Log logr.Logger
	// Clock (default: the real one).
	Clock clock.PassiveClock
	// RateLimiter spaces the retries of failed requests (nil: controller-runtime's default).
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
}

// Controller observes one controller's reconciles and queue. Its methods are safe for concurrent
// use.
type Controller struct {
	name string
	opts Options

	mu      sync.Mutex
	seq     uint64
	running map[uint64]inFlight
	queue   *queue
	// pendingSince: when Check first saw ready requests with no reconcile running (zero: not so).
	pendingSince time.Time
	exited       []string
	panics       int
	lastPanic    string
	done         int64
}

type inFlight struct {
	req   reconcile.Request
	since time.Time
}

// New returns an observer for the controller called name.
func New(name string, opts Options) *Controller {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.HungAfter <= 0 {
		opts.HungAfter = DefaultHungAfter
	}
	if opts.StallAfter <= 0 {
		opts.StallAfter = DefaultStallAfter
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{name: name, opts: opts, running: map[uint64]inFlight{}}
}

// Observe returns opts with c's observed queue installed, and takes its worker count
// (MaxConcurrentReconciles, default 1) and, when opts sets none, c's rate limiter. Wrap the controller's
// reconciler with Reconciler: the controller's builder stays its own.
func (c *Controller) Observe(opts controller.Options) controller.Options {
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 1
	}
	c.mu.Lock()
	c.opts.Workers = opts.MaxConcurrentReconciles
	c.mu.Unlock()
	if opts.RateLimiter == nil {
		opts.RateLimiter = c.opts.RateLimiter
	}
	opts.NewQueue = c.NewQueue
	return opts
}

// Reconciler wraps r so that each reconcile is recorded as it starts and ends.
func (c *Controller) Reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		id := c.begin(req)
		returned := false
		defer func() {
			if returned {
				c.end(id)
				return
			}
			// Not returned: a panic, or runtime.Goexit (recover returns nil) ending the worker.
			p := recover()
			c.abort(id, req, p)
			if p != nil {
				panic(p)
			}
		}()
		res, err := r.Reconcile(ctx, req)
		returned = true
		return res, err
	})
}

func (c *Controller) begin(req reconcile.Request) uint64 {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.running[c.seq] = inFlight{req: req, since: now}
	return c.seq
}

func (c *Controller) end(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, id)
	c.done++
}

func (c *Controller) abort(id uint64, req reconcile.Request, p any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, id)
	if p != nil {
		// controller-runtime recovers it by default (the worker lives on); otherwise the process
		// ends with it.
		c.panics++
		c.lastPanic = fmt.Sprintf("reconcile of %s panicked: %v", req, p)
		return
	}
	c.exited = append(c.exited, fmt.Sprintf("worker exited while reconciling %s", req))
}

// NewQueue builds the controller's queue (controller-runtime's default priority queue, with its
// metrics) wrapped so that each request taken is seen. It has controller.Options.NewQueue's
// signature.
func (c *Controller) NewQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q := &queue{PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter = rl
		o.Log = c.opts.Log.WithValues("controller", name)
	}), c: c}
	c.mu.Lock()
	c.queue = q
	c.pendingSince = time.Time{}
	c.mu.Unlock()
	return q
}

// queue is the controller's priority queue, noting each request a worker takes.
type queue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	c *Controller
}

func (q *queue) GetWithPriority() (reconcile.Request, int, bool) {
	req, prio, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.c.mu.Lock()
		q.c.pendingSince = time.Time{}
		q.c.mu.Unlock()
	}
	return req, prio, shutdown
}

func (q *queue) Get() (reconcile.Request, bool) {
	req, _, shutdown := q.GetWithPriority()
	return req, shutdown
}

// Check fails when a worker exited, a reconcile is hung or the queue is stalled (see the package
// documentation); the error names each.
func (c *Controller) Check(context.Context) error {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	ready := 0
	if q != nil && !q.ShuttingDown() {
		ready = q.Len() // outside c.mu: never hold ours while the queue takes its own
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var why []string
	if n := len(c.exited); n > 0 {
		why = append(why, fmt.Sprintf("%d of %d workers gone (%s)", n, c.opts.Workers, c.exited[n-1]))
	}
	var hung []string
	for _, f := range c.running {
		if d := now.Sub(f.since); d > c.opts.HungAfter {
			hung = append(hung, fmt.Sprintf("reconcile of %s running for %s (limit %s)", f.req,
				round(d), c.opts.HungAfter))
		}
	}
	sort.Strings(hung)
	why = append(why, hung...)
	switch {
	case ready == 0 || len(c.running) > 0:
		c.pendingSince = time.Time{}
	case c.pendingSince.IsZero():
		c.pendingSince = now
	case now.Sub(c.pendingSince) > c.opts.StallAfter:
		why = append(why, fmt.Sprintf("queue stalled: %d requests ready, none taken and none running for %s (limit %s)",
			ready, round(now.Sub(c.pendingSince)), c.opts.StallAfter))
	}
	if len(why) > 0 {
		return fmt.Errorf("controller %s: %s", c.name, strings.Join(why, "; "))
	}
	return nil
}

// round shortens a duration for a reason: milliseconds under a second, else seconds.
func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// Stats is what a Controller has seen, for logs and tests.
type Stats struct {
	Running, Done, Panics, Exited int
	LastPanic                     string
}

// Stats returns the counts seen so far.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Running: len(c.running), Done: int(c.done), Panics: c.panics, Exited: len(c.exited), LastPanic: c.lastPanic}
}

// Informer is the part of an informer that InformerRunning reads (controller-runtime's
// cache.Informer and client-go's SharedIndexInformer have it).
type Informer interface {
	IsStopped() bool
}

// ErrInformerStopped is wrapped by InformerRunning's error.
var ErrInformerStopped = errors.New("informer stopped")

// InformerOptions configure InformerRunning.
type InformerOptions struct {
	// Name of the informer, for messages (such as "vitalsclusters").
	Name string
	// Get returns the informer (required). It must not wait for the informer to sync (with
	// controller-runtime: cache.BlockUntilSynced(false)); an error from it fails the check.
	Get func(context.Context) (Informer, error)
}

// InformerRunning fails when the informer that opts.Get returns has stopped.
func InformerRunning(opts InformerOptions) (checks.Func, error) {
	name, get := opts.Name, opts.Get
	if get == nil || name == "" {
		return nil, fmt.Errorf("informer running check: Name %q and Get: expected both", name)
	}
	return func(ctx context.Context) error {
		i, err := get(ctx)
		if err != nil {
			return fmt.Errorf("informer %s: %w", name, err)
		}
		if i.IsStopped() {
			return fmt.Errorf("informer %s: %w: its watch loop ended while the process runs", name, ErrInformerStopped)
		}
		return nil
	}, nil
}

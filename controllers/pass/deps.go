package pass

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// Deps are what every cluster controller works with; the operator builds them once and every controller
// shares them.
type Deps struct {
	// Client reads VitalsClusters from the manager's cache.
	Client client.Client
	// APIReader reads a VitalsCluster from the API server where the cache may lag (nil: Client).
	APIReader client.Reader
	// Tenancy gives each cluster its proven cloud scope, or refuses it.
	Tenancy tenancy.Resolver
	// Workload gives each cluster its workload cluster (nil: controllers that need one refuse to run).
	Workload workload.Access
	// Policy decides every change and records it (required).
	Policy remediation.Policy
	// Fencer fences the status and finalizer writes of a cluster by this replica's fenced validity (the
	// remediation policy; nil: none, for a client that does not fence).
	Fencer remediation.Fencer
	// Checks receive the per-cluster checks the policy's gate reads (nil: not set by the controllers).
	Checks remediation.Checks
	// Recorder makes each controller's Event recorder (nil: no Events).
	Recorder func(controller string) events.EventRecorder
	// Clock (nil: the real clock).
	Clock clock.Clock
	// Writer writes the controllers' parts of the status (nil: one on Client).
	Writer *Writer
	// Observer observes each controller's work queue and reconciles (the operator's liveness); nil: none.
	Observer Observer
}

// Observer watches a controller's progress: it may replace the controller's queue (its options) and wrap
// its reconciler. package progress implements it.
type Observer interface {
	Observe(name string, opts controller.Options) (controller.Options, func(reconcile.Reconciler) reconcile.Reconciler, error)
}

// Validate checks the dependencies every controller needs and fills the defaults. A controller that
// changes anything also needs Policy (RequirePolicy).
func (d *Deps) Validate() error {
	var missing []string
	if d.Client == nil {
		missing = append(missing, "Client")
	}
	if d.Tenancy == nil {
		missing = append(missing, "Tenancy")
	}
	if len(missing) > 0 {
		return fmt.Errorf("controller dependencies missing: %v", missing)
	}
	if d.APIReader == nil {
		d.APIReader = d.Client
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.Writer == nil {
		d.Writer = &Writer{Client: d.Client, Clock: d.Clock}
	}
	if d.Writer.Fencer == nil {
		d.Writer.Fencer = d.Fencer
	}
	return nil
}

// recorder is controller's Event recorder (nil when Events are off).
func (d *Deps) recorder(controller string) events.EventRecorder {
	if d.Recorder == nil {
		return nil
	}
	return d.Recorder(controller)
}

// Setup registers r as the controller name over VitalsClusters with opts, observed by d.Observer, its
// events filtered by preds; more adds watches.
func (d *Deps) Setup(ctx context.Context, mgr ctrl.Manager, name string, opts controller.Options, r reconcile.Reconciler,
	preds []predicate.Predicate, more func(*builder.Builder) *builder.Builder) error {
	return d.SetupFor(ctx, mgr, name, &v1alpha1.VitalsCluster{}, opts, r, preds, more)
}

// SetupFor is Setup over the objects of obj's type (a VitalsRemediation, ...).
func (d *Deps) SetupFor(ctx context.Context, mgr ctrl.Manager, name string, obj client.Object, opts controller.Options, r reconcile.Reconciler,
	preds []predicate.Predicate, more func(*builder.Builder) *builder.Builder) error {
	if ctx == nil {
		return errors.New("setup " + name + ": no context")
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 1
	}
	wrap := func(r reconcile.Reconciler) reconcile.Reconciler { return r }
	if d.Observer != nil {
		var err error
		if opts, wrap, err = d.Observer.Observe(name, opts); err != nil {
			return fmt.Errorf("setup %s: %w", name, err)
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(name).For(obj, builder.WithPredicates(preds...)).WithOptions(opts)
	if more != nil {
		b = more(b)
	}
	if err := b.Complete(wrap(r)); err != nil {
		return fmt.Errorf("setup %s: %w", name, err)
	}
	return nil
}

// RequirePolicy fails when d has no remediation policy: without one nothing may be changed.
func (d *Deps) RequirePolicy() error {
	if d.Policy == nil {
		return errors.New("no remediation policy: nothing may be changed")
	}
	return nil
}

// Fenced is ctx carrying the fence of c's status and finalizer writes (nil Fencer: ctx as it is).
func (d *Deps) Fenced(ctx context.Context, c *v1alpha1.VitalsCluster) context.Context {
	return fenced(ctx, d.Fencer, c)
}

func fenced(ctx context.Context, f remediation.Fencer, c *v1alpha1.VitalsCluster) context.Context {
	if f == nil {
		return ctx
	}
	return fencing.With(ctx, f.StatusFence(c))
}

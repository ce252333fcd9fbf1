package operator

import (
	"fmt"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/sharding"
)

// CheckSharding is the readiness check of a sharded replica's membership.
const CheckSharding = "sharding"

// Sharding configures N active replicas (Options.Sharding), each acting on the VitalsClusters of the hash
// ranges of their UIDs it holds through Leases (package sharding). The zero value of each field takes the
// default noted.
type Sharding struct {
	// Ranges the UID hash space is cut into: a power of two, the same on every replica (default 16).
	Ranges int
	// ClientSide: the replicas list and watch every VitalsCluster and filter by hash (for API servers
	// without the ShardedListAndWatch feature gate, which ignore the selector anyway; default: the
	// informers ask the API server for their ranges, and filter too).
	ClientSide bool
	// LeaseDuration, RenewInterval and SafetyMargin of the shard Leases (default 20s, 5s, 8s; see
	// sharding.Options). SafetyMargin must exceed Options.WriteTimeout.
	LeaseDuration, RenewInterval, SafetyMargin time.Duration
}

// setupSharding builds the coordinator and makes the VitalsCluster informer follow its ranges: every
// controller's watch of VitalsClusters (the manager's shared informer) sees this replica's clusters only,
// and nothing else of a controller has to know.
func (o *Operator) setupSharding(mo *cache.Options) error {
	sh := o.opts.Sharding
	// A client of its own (its own rate limiter, as leader election's) on a connection of its own: the
	// controllers' requests never delay a renewal, and neither do the informers' lists of thousands of
	// clusters, which share one HTTP/2 connection (client-go shares one transport between clients of
	// equal configurations; a dialer of its own makes this one apart).
	lc := rest.CopyConfig(o.opts.RestConfig)
	if lc.Dial == nil {
		lc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	cs, err := kclient.NewForConfig(lc)
	if err != nil {
		return fmt.Errorf("operator: shard Lease client: %w", err)
	}
	m := sharding.NewMetrics(o.opts.Registry)
	c, err := sharding.New(sharding.Options{
		Leases: cs.CoordinationV1(), Namespace: o.opts.LeaderElectionNamespace, Name: o.opts.LeaderElectionID,
		Identity: o.identity, Ranges: sh.Ranges,
		LeaseDuration: sh.LeaseDuration, RenewInterval: sh.RenewInterval, SafetyMargin: sh.SafetyMargin,
		Clock: o.opts.Clock, Logger: o.opts.Logger, Metrics: m,
	})
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	mode := sharding.ServerSide
	if sh.ClientSide {
		mode = sharding.ClientSide
	}
	mo.NewInformer = sharding.NewInformer(c, mode, m, isVitalsCluster)
	o.shard = c
	return nil
}

// startSharding adds the coordinator to the manager and its readiness check to the health profile.
func (o *Operator) startSharding() error {
	if err := o.mgr.Add(o.shard); err != nil {
		return fmt.Errorf("operator: shard coordinator: %w", err)
	}
	c := health.Check{Name: CheckSharding, Probes: health.Readiness, Run: o.shard.Check, Detail: o.shard.Detail,
		Interval: o.opts.CheckInterval, Timeout: o.opts.CheckTimeout}
	if err := o.health.Register(c); err != nil {
		return fmt.Errorf("operator: health checks: %w", err)
	}
	return nil
}

func isVitalsCluster(obj runtime.Object) bool {
	if _, ok := obj.(*v1alpha1.VitalsCluster); ok {
		return true
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return gvk.Group == v1alpha1.GroupVersion.Group && gvk.Kind == "VitalsCluster"
}

// Shard is this replica's shard coordinator (nil unless Options.Sharding is set).
func (o *Operator) Shard() *sharding.Coordinator { return o.shard }

package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	kclient "k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/controllers/routegc"
	"github.com/vitalsproject/vitals/health"
	kchecks "github.com/vitalsproject/vitals/health/checks/kubernetes"
	oschecks "github.com/vitalsproject/vitals/health/checks/openstack"
	"github.com/vitalsproject/vitals/health/checks/progress"
	"github.com/vitalsproject/vitals/openstack"
)

// Names of the operator's checks and components.
const (
	CheckKubernetes   = "kubernetes"
	CheckInformers    = "informers"
	CheckKeystone     = "keystone"
	CheckNeutron      = "neutron"
	CheckQuota        = "quota"
	CheckLeaderLease  = "leader-election"
	ComponentRouteGC  = "controller." + routegc.Name // liveness from the controller's progress
	ComponentInformer = "informer.vitalsclusters"    // liveness of the VitalsCluster informer
	ComponentAccess   = "controller." + access.Name  // liveness from the access controller's progress
)

// healthProfile registers the operator's health profile; each controller's liveness from its progress is
// registered as the controller is set up (observer).
func (o *Operator) healthProfile(cs kclient.Interface) error {
	opts := o.opts
	check := func(name string, p health.Probe, run health.Func) health.Check {
		return health.Check{Name: name, Probes: p, Run: run, Interval: opts.CheckInterval, Timeout: opts.CheckTimeout}
	}
	// The list+watch check holds its watch open for one second (the server closes it): give it room.
	listWatch, err := kchecks.ListWatch(kchecks.ListWatchOptions{Namespaces: cs.CoreV1().Namespaces(),
		Options: kchecks.Options{MinInterval: opts.CheckInterval / 2, Clock: opts.Clock}, Namespace: opts.LeaderElectionNamespace,
		WatchTimeout: time.Second})
	if err != nil {
		return fmt.Errorf("operator: health checks: %w", err)
	}
	synced, err := kchecks.CacheSynced(kchecks.CacheSyncedOptions{Cache: o.mgr.GetCache()})
	if err != nil {
		return fmt.Errorf("operator: health checks: %w", err)
	}
	kube := check(CheckKubernetes, health.Readiness, listWatch)
	kube.Timeout = max(kube.Timeout, 3*time.Second)
	kube.Interval = max(kube.Interval, kube.Timeout)
	checks := []health.Check{kube, check(CheckInformers, health.Readiness, synced)}
	if o.cloud != nil {
		ks := &cloudCheck{cloud: o.cloud, build: func(c *openstack.Cloud) (health.Func, error) {
			return oschecks.Keystone(oschecks.Options{Cloud: c, MinInterval: opts.CheckInterval / 2, Clock: opts.Clock})
		}}
		nt := &cloudCheck{cloud: o.cloud, build: func(c *openstack.Cloud) (health.Func, error) {
			return oschecks.Neutron(oschecks.Options{Cloud: c, MinInterval: opts.CheckInterval / 2, Clock: opts.Clock})
		}}
		checks = append(checks, check(CheckKeystone, health.Readiness, ks.run), check(CheckNeutron, health.Readiness, nt.run))
		// Quota headroom of the operator's project (ports, subnets, networks, security groups, and
		// routes per router): degraded unless configured critical.
		qt := &cloudCheck{cloud: o.cloud, build: func(c *openstack.Cloud) (health.Func, error) {
			return oschecks.QuotaHeadroom(oschecks.QuotaOptions{MaxRoutes: opts.MaxRoutes,
				Options: oschecks.Options{Cloud: c, MinInterval: max(opts.CheckInterval/2, opts.QuotaInterval/2), Clock: opts.Clock}})
		}}
		q := check(CheckQuota, health.Readiness, qt.run)
		q.Interval = max(q.Interval, opts.QuotaInterval)
		if !opts.QuotaCritical {
			q.Severity = health.Degraded
		}
		checks = append(checks, q)
	}
	if opts.LeaderElect {
		lease, err := kchecks.LeaderLease(kchecks.LeaseOptions{Leases: cs.CoordinationV1().Leases(opts.LeaderElectionNamespace),
			Options:   kchecks.Options{MinInterval: opts.CheckInterval / 2, Clock: opts.Clock},
			Namespace: opts.LeaderElectionNamespace, Name: opts.LeaderElectionID, Identity: o.identity,
			IsLeader: o.elected.Load,
		})
		if err != nil {
			return fmt.Errorf("operator: health checks: %w", err)
		}
		c := check(CheckLeaderLease, health.Liveness, lease)
		// A leader that cannot see its Lease for a few rounds has stopped renewing it too.
		c.FailureThreshold = 2
		checks = append(checks, c)
	}
	if err := o.health.Register(checks...); err != nil {
		return fmt.Errorf("operator: health checks: %w", err)
	}
	// Liveness from progress: the informer's run loop, and each controller's workers and queue.
	inf, err := progress.InformerRunning(progress.InformerOptions{Name: "vitalsclusters", Get: func(ctx context.Context) (progress.Informer, error) {
		return o.mgr.GetCache().GetInformer(ctx, &v1alpha1.VitalsCluster{}, cache.BlockUntilSynced(false))
	}})
	if err != nil {
		return fmt.Errorf("operator: health checks: %w", err)
	}
	if err := o.health.Register(check(ComponentInformer, health.Liveness, inf)); err != nil {
		return fmt.Errorf("operator: health checks: %w", err)
	}
	return nil
}

// cloudCheck connects lazily and builds its check once per cloud.
type cloudCheck struct {
	cloud *lazyCloud
	build func(*openstack.Cloud) (health.Func, error)

	mu    sync.Mutex
	built *openstack.Cloud
	fn    health.Func
}

func (c *cloudCheck) run(ctx context.Context) error {
	cl, err := c.cloud.get(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.built != cl {
		fn, err := c.build(cl)
		if err != nil {
			c.mu.Unlock()
			return err
		}
		c.built, c.fn = cl, fn
	}
	fn := c.fn
	c.mu.Unlock()
	return fn(ctx)
}

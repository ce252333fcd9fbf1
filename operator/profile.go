package operator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/routegc"
	"github.com/vitalsproject/vitals/health"
	kchecks "github.com/vitalsproject/vitals/health/checks/kubernetes"
	oschecks "github.com/vitalsproject/vitals/health/checks/openstack"
	"github.com/vitalsproject/vitals/openstack"
)

// Names of the operator's checks and components.
const (
	CheckKubernetes   = "kubernetes"
	CheckInformers    = "informers"
	CheckKeystone     = "keystone"
	CheckNeutron      = "neutron"
	CheckLeaderLease  = "leader-election"
	ComponentRouteGC  = "controller." + routegc.Name
	ComponentInformer = "informer.vitalsclusters"
)

// gateChecks are the checks whose failure holds every controller back: our own Kubernetes, Keystone
// and Neutron readiness, and the Lease (a replica that lost it must stop acting at once, not only
// when its elector gives up).
var gateChecks = []string{CheckKubernetes, CheckKeystone, CheckNeutron, CheckLeaderLease}

// healthProfile registers the controller health profile and returns the tracker of routegc's loop.
func (o *Operator) healthProfile(cs kclient.Interface) (routegc.Tracker, error) {
	opts := o.opts
	check := func(name string, p health.Probe, run health.Func) health.Check {
		return health.Check{Name: name, Probes: p, Run: run, Interval: opts.CheckInterval, Timeout: opts.CheckTimeout}
	}
	// The list+watch check holds its watch open for one second (the server closes it): give it room.
	kube := check(CheckKubernetes, health.Readiness, kchecks.ListWatch(cs, kchecks.ListWatchOptions{
		Options: kchecks.Options{MinInterval: opts.CheckInterval / 2, Clock: opts.Clock}, Namespace: opts.LeaderElectionNamespace,
		WatchTimeout: time.Second}))
	kube.Timeout = max(kube.Timeout, 3*time.Second)
	kube.Interval = max(kube.Interval, kube.Timeout)
	checks := []health.Check{
		kube,
		check(CheckInformers, health.Readiness, kchecks.CacheSynced(o.mgr.GetCache())),
	}
	if o.cloud != nil {
		ks := &cloudCheck{cloud: o.cloud, build: func(c *openstack.Cloud) health.Func {
			return oschecks.Keystone(c, oschecks.Options{MinInterval: opts.CheckInterval / 2, Clock: opts.Clock})
		}}
		nt := &cloudCheck{cloud: o.cloud, build: func(c *openstack.Cloud) health.Func {
			return oschecks.Neutron(c, oschecks.Options{MinInterval: opts.CheckInterval / 2, Clock: opts.Clock})
		}}
		checks = append(checks, check(CheckKeystone, health.Readiness, ks.run), check(CheckNeutron, health.Readiness, nt.run))
	}
	if opts.LeaderElect {
		c := check(CheckLeaderLease, health.Liveness, kchecks.LeaderLease(cs, kchecks.LeaseOptions{
			Options:   kchecks.Options{MinInterval: opts.CheckInterval / 2, Clock: opts.Clock},
			Namespace: opts.LeaderElectionNamespace, Name: opts.LeaderElectionID, Identity: o.identity,
			IsLeader: o.elected.Load,
		}))
		// A leader that cannot see its Lease for a few rounds has stopped renewing it too.
		c.FailureThreshold = 2
		checks = append(checks, c)
	}
	if err := o.health.Register(checks...); err != nil {
		return nil, fmt.Errorf("operator: health checks: %w", err)
	}
	loop, err := o.health.Component(ComponentRouteGC, health.ComponentOptions{Deadline: opts.ComponentDeadline})
	if err != nil {
		return nil, fmt.Errorf("operator: health component: %w", err)
	}
	inf, err := o.health.Component(ComponentInformer, health.ComponentOptions{Deadline: opts.ComponentDeadline})
	if err != nil {
		return nil, fmt.Errorf("operator: health component: %w", err)
	}
	tr := &loopTracker{clock: opts.Clock}
	period := max(opts.ComponentDeadline/4, 10*time.Millisecond)
	wd := &watchdog{clock: opts.Clock, period: period, beat: func(ctx context.Context) {
		if busy := tr.busyFor(); busy <= opts.PassTimeout {
			loop.Beat()
		}
		i, err := o.mgr.GetCache().GetInformer(ctx, &v1alpha1.VitalsCluster{})
		if err == nil && i.HasSynced() && !i.IsStopped() {
			inf.Beat()
		}
	}}
	if err := o.mgr.Add(wd); err != nil {
		return nil, fmt.Errorf("operator: watchdog: %w", err)
	}
	return tr, nil
}

// gateOpen reports whether controllers may act: every gate check present passes.
func (o *Operator) gateOpen() (bool, string) {
	var why []string
	for _, n := range gateChecks {
		r, ok := o.health.Result(n)
		if !ok {
			continue
		}
		if r.Status != health.StatusOK {
			reason := string(r.Status)
			if r.Err != nil {
				reason = r.Err.Error()
			}
			why = append(why, n+": "+reason)
		}
	}
	if len(why) > 0 {
		return false, strings.Join(why, "; ")
	}
	return true, ""
}

// cloudCheck connects lazily and builds its check once per cloud.
type cloudCheck struct {
	cloud *lazyCloud
	build func(*openstack.Cloud) health.Func

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
		c.built, c.fn = cl, c.build(cl)
	}
	fn := c.fn
	c.mu.Unlock()
	return fn(ctx)
}

// loopTracker knows whether a pass is running and since when.
type loopTracker struct {
	clock clock.PassiveClock
	since atomic.Int64 // unix nanoseconds of the running pass's start; 0 when idle
}

func (t *loopTracker) Begin() { t.since.Store(t.clock.Now().UnixNano()) }
func (t *loopTracker) End()   { t.since.Store(0) }

func (t *loopTracker) busyFor() time.Duration {
	s := t.since.Load()
	if s == 0 {
		return 0
	}
	return t.clock.Since(time.Unix(0, s))
}

// watchdog beats the liveness components while the loops they stand for make progress. It runs on
// every replica, leader or not: a standby is alive.
type watchdog struct {
	clock  clock.WithTicker
	period time.Duration
	beat   func(context.Context)
}

var _ manager.LeaderElectionRunnable = (*watchdog)(nil)

func (w *watchdog) NeedLeaderElection() bool { return false }

func (w *watchdog) Start(ctx context.Context) error {
	t := w.clock.NewTicker(w.period)
	defer t.Stop()
	for {
		w.beat(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

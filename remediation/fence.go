package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
)

// DefaultLiveMaxAge is how long one live read of a cluster serves the fences of the writes that follow it.
const DefaultLiveMaxAge = time.Second

// Validity is how long this replica may still act on an object: a *sharding.Coordinator (the object's
// range) or a *sharding.Leader (leader election: one lease for every object).
type Validity interface {
	// Validity is the end of the fenced validity for the object with this UID; ok is false when this
	// replica does not hold it.
	Validity(uid types.UID) (until time.Time, ok bool)
}

// Fencer makes the fences of the writes that are not actions: a cluster's own status and finalizers.
type Fencer interface {
	// StatusFence guards the writes of c's status and finalizers by this replica's fenced validity for c
	// (and the per-write timeout) only: a paused, excluded or dry-run cluster's status is still written.
	StatusFence(c *v1alpha1.VitalsCluster) fencing.Fence
}

// StatusFence is the shard-only fence of c's status and finalizer writes.
func (e *Engine) StatusFence(c *v1alpha1.VitalsCluster) fencing.Fence {
	uid := c.UID
	return fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		left, err := e.left(uid)
		if err != nil {
			return nil, nil, err
		}
		wctx, cancel := e.bound(ctx, left)
		return wctx, cancel, nil
	})
}

// Fence is the fence of the write (or writes) that carry out actions this pass allowed; one write may
// carry several (a route update removes many routes). At each write it re-checks, in this order: the
// operator-wide pause and dry-run; the cluster as the API server has it now (the same UID, its pause
// annotation, the pass's interlock (Scope.Interlock), the exclusions of every action, spec.remediation.dryRun and the controller's own dryRun);
// for a disruptive or destructive action, the outage freeze (an outage seen since the pass began: a write of
// the pass that found its API unreachable, or a cluster check the pass needs failing after its last outage);
// and last, closest to the write, this replica's fenced validity for the cluster. The write's context ends
// at that validity or after the per-write timeout, whichever comes first.
//
// The cluster is read live (Options.Live), not taken from the pass: a pause or an exclusion set during a
// pass holds the pass's next write. One read serves the writes entered within Options.LiveMaxAge of when it
// was sent (a teardown of hundreds of deletes reads the cluster about once a second, not once a delete);
// concurrent writes wait for the read in flight. A change is seen by every write entered LiveMaxAge after it.
func (p *pass) Fence(actions ...Action) fencing.Fence {
	as := append([]Action(nil), actions...)
	return fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		if err := p.recheck(ctx, as); err != nil {
			return nil, nil, err
		}
		left, err := p.e.left(p.c.UID)
		if err != nil {
			return nil, nil, err
		}
		wctx, cancel := p.e.bound(ctx, left)
		return wctx, cancel, nil
	})
}

// recheck applies the rules a write re-checks, on the cluster as the API server has it now.
func (p *pass) recheck(ctx context.Context, as []Action) error {
	refuse := func(r fencing.Reason, msg string) error { return &fencing.Error{Reason: r, Message: msg} }
	e := p.e
	if ok, why := e.operatorPaused(); ok {
		return refuse(fencing.ReasonOperatorPaused, "operator-wide pause: "+why)
	}
	if e.limits.DryRun {
		return refuse(fencing.ReasonDryRun, "dry run (operator --dry-run)")
	}
	c := p.c
	if e.live != nil {
		got, err := e.live.get(ctx, p.key)
		switch {
		case apierrors.IsNotFound(err):
			return refuse(fencing.ReasonClusterGone, fmt.Sprintf("cluster %s is gone", p.key))
		case err != nil:
			return refuse(fencing.ReasonUnverified, fmt.Sprintf("read cluster %s before the write: %v", p.key, err))
		case got.UID != p.c.UID:
			return refuse(fencing.ReasonClusterGone, fmt.Sprintf("cluster %s is another cluster now (uid %s, was %s)", p.key, got.UID, p.c.UID))
		}
		c = got
	}
	s := settingsOf(c)
	if s.paused {
		return refuse(fencing.ReasonPaused, "paused: "+s.pausedWhy)
	}
	if p.scope.Interlock != nil {
		if why := p.scope.Interlock(c); why != "" {
			return refuse(fencing.ReasonInterlock, why)
		}
	}
	for _, a := range as {
		if s.excluded(a) {
			return refuse(fencing.ReasonExcluded, a.Object()+" excluded by annotation "+v1alpha1.AnnotationExclude)
		}
	}
	var why []string
	if s.dryRun {
		why = append(why, "spec.remediation.dryRun")
	}
	if p.scope.DryRun || controllerDryRun(c, p.controller) {
		why = append(why, p.controller+" dryRun")
	}
	if len(why) > 0 {
		return refuse(fencing.ReasonDryRun, "dry run ("+strings.Join(why, ", ")+")")
	}
	if slices.ContainsFunc(as, func(a Action) bool { return a.Class != Safe && !a.Teardown }) {
		// The outage freeze, again at the write: the cluster may have become unreachable after the action
		// was allowed (the workload API stopped between the pass's read and this write).
		now := e.clock.Now()
		if last, why := e.outageOf(now, p.key, p.needs, Scope{}); !last.IsZero() && !last.After(now.Add(maxClockSkew)) {
			p.sawOutage(last, why) // keeps the later of it and the outage recorded (by any pass of the cluster)
		}
		if until := p.frozenUntil(); now.Before(until) {
			return refuse(fencing.ReasonFrozen, p.freezeMessage(until))
		}
	}
	return nil
}

// controllerDryRun is a controller's own dry-run setting in c's spec.
func controllerDryRun(c *v1alpha1.VitalsCluster, controller string) bool {
	cs := &c.Spec.Controllers
	switch controller {
	case "routegc":
		return cs.RouteGC.DryRun
	case "flight":
		return cs.Flight.DryRun
	case "deorbit":
		return cs.Deorbit.DryRun
	}
	return false
}

// left is how long a write may take from now: the fenced validity left for uid, at most the per-write
// timeout; or the refusal when none is left.
func (e *Engine) left(uid types.UID) (time.Duration, error) {
	if e.validity == nil {
		return e.writeTimeout, nil
	}
	until, ok := e.validity.Validity(uid)
	if !ok {
		msg := "this replica does not hold the cluster's shard range or leadership"
		if e.shard != nil {
			msg = e.shard.Why(uid)
		}
		return 0, &fencing.Error{Reason: fencing.ReasonShardNotHeld, Message: msg}
	}
	left := until.Sub(e.clock.Now())
	if left <= 0 {
		return 0, &fencing.Error{Reason: fencing.ReasonExpired,
			Message: "this replica's fenced validity for the cluster ran out at " + until.UTC().Format(time.RFC3339Nano)}
	}
	return min(left, e.writeTimeout), nil
}

// bound returns ctx ended after d, in real time and on the engine's clock (an injected clock ends it when
// it passes d, as a frozen replica's real clock does when it resumes).
// The context's cause says which bound it is (a *fencing.Cut): the validity left, or the write timeout.
func (e *Engine) bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	cut := &fencing.Cut{Validity: d < e.writeTimeout, After: d}
	ctx, cancel := context.WithTimeoutCause(ctx, d, cut)
	clk, ok := e.clock.(clock.WithDelayedExecution)
	if !ok {
		return ctx, cancel
	}
	if _, real := e.clock.(clock.RealClock); real {
		return ctx, cancel
	}
	cctx, ccancel := context.WithCancelCause(ctx)
	t := clk.AfterFunc(d, func() { ccancel(cut) })
	return cctx, func() { t.Stop(); ccancel(context.Canceled); cancel() }
}

// liveReads reads clusters from the API server for the fences, one read per cluster at a time: a read
// serves the fences entered within maxAge of when it was sent, and fences entered while it is in flight
// wait for it.
type liveReads struct {
	r       client.Reader
	clock   clock.PassiveClock
	maxAge  time.Duration
	timeout time.Duration

	mu    sync.Mutex
	reads map[types.NamespacedName]*liveRead
}

type liveRead struct {
	sent time.Time
	done chan struct{}
	c    *v1alpha1.VitalsCluster
	err  error
}

// maxLiveReads is how many clusters' reads are kept before those past their age are dropped.
const maxLiveReads = 64

func (l *liveReads) get(ctx context.Context, key types.NamespacedName) (*v1alpha1.VitalsCluster, error) {
	now := l.clock.Now()
	l.mu.Lock()
	rd := l.reads[key]
	fresh := rd != nil && now.Sub(rd.sent) < l.maxAge
	if fresh {
		select {
		case <-rd.done:
			fresh = rd.err == nil // a failed read is never reused, only shared with those who waited for it
		default:
		}
	}
	if !fresh {
		if len(l.reads) >= maxLiveReads {
			l.pruneLocked(now)
		}
		rd = &liveRead{sent: now, done: make(chan struct{})}
		l.reads[key] = rd
		go l.read(context.WithoutCancel(ctx), key, rd)
	}
	l.mu.Unlock()
	select {
	case <-rd.done:
		return rd.c, rd.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read runs one read, bounded by the write timeout, apart from the context of the fence that started it:
// the others waiting for it must not fail because that one gave up.
func (l *liveReads) read(ctx context.Context, key types.NamespacedName, rd *liveRead) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	var c v1alpha1.VitalsCluster
	if err := l.r.Get(ctx, key, &c); err != nil {
		rd.err = err
	} else {
		rd.c = &c
	}
	close(rd.done)
}

func (l *liveReads) pruneLocked(now time.Time) {
	for k, rd := range l.reads {
		select {
		case <-rd.done:
			if now.Sub(rd.sent) >= l.maxAge {
				delete(l.reads, k)
			}
		default:
		}
	}
}

func (l *liveReads) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.reads, key)
}

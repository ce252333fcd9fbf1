package remediation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
)

// liveCluster stands for the API server in these unit tests: it answers the fences' reads with its
// cluster as it is now, and counts them (the real API server: fencing_test.go of controllers/deorbit).
type liveCluster struct {
	mu    sync.Mutex
	c     *v1alpha1.VitalsCluster // nil: not found
	err   error
	reads atomic.Int32
	hold  chan struct{} // when set, a read waits for it
}

func (l *liveCluster) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	l.reads.Add(1)
	if l.hold != nil {
		select {
		case <-l.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.c == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: "vitals.vitalsproject.io", Resource: "vitalsclusters"}, key.Name)
	}
	l.c.DeepCopyInto(obj.(*v1alpha1.VitalsCluster))
	return nil
}

func (l *liveCluster) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

func (l *liveCluster) set(mutate func(*v1alpha1.VitalsCluster)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mutate(l.c)
}

// validity is a fixed fenced validity for every UID.
type validity struct {
	until time.Time
	held  bool
}

func (v validity) Validity(types.UID) (time.Time, bool) { return v.until, v.held }

// fenceEnv is an env whose engine reads the cluster live from l and is bounded by v.
func fenceEnv(t *testing.T, limits *Limits, v Validity, l *liveCluster) *env {
	t.Helper()
	e := newEnv(t, limits)
	e.reg = prometheus.NewRegistry()
	var err error
	e.e, err = New(Options{Limits: limits, Checks: e.checks, Readiness: e.ready, ReadinessChecks: []string{"keystone"},
		Switch: e.sw, Recorder: e.events, Metrics: NewMetrics(e.reg), Clock: e.clock, Validity: v, Live: l,
		WriteTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFence: at the write, the fence of an allowed action re-checks the pauses, the exclusions and
// dry-run on the cluster as the API server has it now, and the replica's validity last; the write's
// context ends at the validity or after the write timeout, whichever comes first.
func TestFence(t *testing.T) {
	action := route("198.19.1.0/24", "10.0.0.9", t0.Add(-time.Hour))
	for _, tc := range []struct {
		name     string
		limits   func(*Limits)
		validity Validity
		paused   bool // the operator-wide switch
		live     func(l *liveCluster)
		// interlock: the pass's Scope.Interlock refuses a live cluster whose policy is not Deorbit
		interlock bool
		reason    fencing.Reason // "": allowed
		left      time.Duration  // the write's time when allowed
	}{
		{name: "nothing changed: bounded by the write timeout", validity: validity{until: t0.Add(time.Minute), held: true}, left: 3 * time.Second},
		{name: "no validity (one replica)", left: 3 * time.Second},
		{name: "the validity ends first", validity: validity{until: t0.Add(time.Second), held: true}, left: time.Second},
		{name: "the validity ran out", validity: validity{until: t0, held: true}, reason: fencing.ReasonExpired},
		{name: "the range was given up", validity: validity{}, reason: fencing.ReasonShardNotHeld},
		{name: "paused since", live: func(l *liveCluster) { l.set(annotate(v1alpha1.AnnotationPaused, "true")) }, reason: fencing.ReasonPaused},
		{name: "a misspelt pause pauses", live: func(l *liveCluster) { l.set(annotate(v1alpha1.AnnotationPaused, "ture")) }, reason: fencing.ReasonPaused},
		{name: "excluded since, by name", live: func(l *liveCluster) { l.set(annotate(v1alpha1.AnnotationExclude, "10.9.9.9/32, 198.19.1.0/24")) }, reason: fencing.ReasonExcluded},
		{name: "cluster dry run since", live: func(l *liveCluster) { l.set(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.DryRun = true }) }, reason: fencing.ReasonDryRun},
		{name: "controller dry run since", live: func(l *liveCluster) {
			l.set(func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.RouteGC.DryRun = true })
		}, reason: fencing.ReasonDryRun},
		{name: "another controller's dry run does not count", live: func(l *liveCluster) {
			l.set(func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.Flight.DryRun = true })
		}, left: 3 * time.Second},
		{name: "operator paused since", paused: true, reason: fencing.ReasonOperatorPaused},
		{name: "operator dry run", limits: func(l *Limits) { l.DryRun = true }, reason: fencing.ReasonDryRun},
		{name: "the cluster is gone", live: func(l *liveCluster) { l.c = nil }, reason: fencing.ReasonClusterGone},
		{name: "another cluster of the same name", live: func(l *liveCluster) { l.set(func(c *v1alpha1.VitalsCluster) { c.UID = "u2" }) }, reason: fencing.ReasonClusterGone},
		{name: "the API server does not answer", live: func(l *liveCluster) { l.err = errors.New("connection refused") }, reason: fencing.ReasonUnverified},
		{name: "paused and expired: the pause is named", validity: validity{until: t0, held: true},
			live: func(l *liveCluster) { l.set(annotate(v1alpha1.AnnotationPaused, "true")) }, reason: fencing.ReasonPaused},
		{name: "the interlock holds", interlock: true, left: 3 * time.Second},
		{name: "the interlock no longer holds", interlock: true, live: func(l *liveCluster) {
			l.set(func(c *v1alpha1.VitalsCluster) { c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan })
		}, reason: fencing.ReasonInterlock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limits := DefaultLimits()
			if tc.limits != nil {
				tc.limits(&limits)
			}
			c := newCluster(func(c *v1alpha1.VitalsCluster) { c.UID = "u1"; c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDeorbit })
			l := &liveCluster{c: c.DeepCopy()}
			v := fenceEnv(t, &limits, tc.validity, l)
			var scope Scope
			if tc.interlock {
				scope.Interlock = func(live *v1alpha1.VitalsCluster) string {
					if live.Spec.Deletion() != v1alpha1.DeletionPolicyDeorbit {
						return "deletionPolicy is " + string(live.Spec.Deletion())
					}
					return ""
				}
			}
			p := v.e.Begin(context.Background(), c, "routegc", nil, scope)
			if tc.limits == nil {
				if d := p.Ask(context.Background(), action); d.Outcome != Allowed {
					t.Fatalf("asked: %s %s", d.Reason, d.Message)
				}
			}
			if tc.live != nil {
				tc.live(l)
			}
			v.sw.paused = tc.paused
			ctx, cancel, err := fencing.Enter(fencing.With(context.Background(), p.Fence(action)))
			if tc.reason != "" {
				if r, ok := fencing.ReasonOf(err); !ok || r != tc.reason {
					t.Fatalf("entered: %v, want a refusal %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			defer cancel()
			dl, _ := ctx.Deadline()
			if left := time.Until(dl); left > tc.left || left < tc.left-time.Minute/2 {
				t.Errorf("the write may take %s, want %s", left.Round(time.Millisecond), tc.left)
			}
		})
	}
}

// TestStatusFence: a status or finalizer write is bounded by the replica's validity only: it is written
// while the cluster or the operator is paused, excluded or in dry run.
func TestStatusFence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		validity Validity
		reason   fencing.Reason
	}{
		{"held", validity{until: t0.Add(time.Minute), held: true}, ""},
		{"one replica", nil, ""},
		{"expired", validity{until: t0.Add(-time.Second), held: true}, fencing.ReasonExpired},
		{"not held", validity{}, fencing.ReasonShardNotHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limits := DefaultLimits()
			limits.DryRun, limits.Paused = true, true
			c := newCluster(annotate(v1alpha1.AnnotationPaused, "true"), func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.DryRun = true })
			v := fenceEnv(t, &limits, tc.validity, &liveCluster{c: c.DeepCopy()})
			_, cancel, err := fencing.Enter(fencing.With(context.Background(), v.e.StatusFence(c)))
			if r, _ := fencing.ReasonOf(err); r != tc.reason {
				t.Fatalf("entered: %v, want %q", err, tc.reason)
			}
			if err == nil {
				cancel()
			}
		})
	}
}

// TestFenceEndsTheWriteOnTheEngineClock: a write entered and then frozen ends when the engine's clock
// passes its bound, as a frozen replica's real clock does when it resumes.
func TestFenceEndsTheWriteOnTheEngineClock(t *testing.T) {
	c := newCluster(func(c *v1alpha1.VitalsCluster) { c.UID = "u1" })
	v := fenceEnv(t, nil, validity{until: t0.Add(2 * time.Second), held: true}, &liveCluster{c: c.DeepCopy()})
	p := v.e.Begin(context.Background(), c, "routegc", nil, Scope{})
	ctx, cancel, err := fencing.Enter(fencing.With(context.Background(), p.Fence()))
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	v.clock.Step(time.Second)
	if ctx.Err() != nil {
		t.Fatal("the write ended before its bound")
	}
	v.clock.Step(time.Second)
	if ctx.Err() == nil {
		t.Fatal("the write outlived its bound on the engine's clock")
	}
	// the validity ended it, not the API: no outage
	err = fencing.Explain(ctx, fmt.Errorf("delete: %w", context.DeadlineExceeded)) // as a real write cut short returns
	if !fencing.CutByValidity(err) || Unreachable(err) {
		t.Errorf("a write the validity cut short: %v (cut by validity %v, unreachable %v)", err, fencing.CutByValidity(err), Unreachable(err))
	}
}

// TestFenceNamesTheBoundThatCutTheWrite: a write's error names which bound of its fence ended it: the
// replica's validity (no sign of an outage) or the per-write timeout (3 s here: an API that did not answer in
// time).
func TestFenceNamesTheBoundThatCutTheWrite(t *testing.T) {
	for _, tc := range []struct {
		name        string
		validity    time.Duration
		byValidity  bool
		unreachable bool
	}{
		{name: "the validity ends first", validity: 2 * time.Second, byValidity: true, unreachable: false},
		{name: "the write timeout ends first", validity: time.Hour, byValidity: false, unreachable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(func(c *v1alpha1.VitalsCluster) { c.UID = "u1" })
			v := fenceEnv(t, nil, validity{until: t0.Add(tc.validity), held: true}, &liveCluster{c: c.DeepCopy()})
			p := v.e.Begin(context.Background(), c, "routegc", nil, Scope{})
			ctx, cancel, err := fencing.Enter(fencing.With(context.Background(), p.Fence()))
			if err != nil {
				t.Fatal(err)
			}
			defer cancel()
			v.clock.Step(4 * time.Second)
			if ctx.Err() == nil {
				t.Fatal("the write outlived its bound")
			}
			err = fencing.Explain(ctx, fmt.Errorf("delete: %w", context.DeadlineExceeded)) // as a real write cut short returns
			if got := fencing.CutByValidity(err); got != tc.byValidity {
				t.Errorf("%v: cut by validity %v, want %v", err, got, tc.byValidity)
			}
			if got := Unreachable(err); got != tc.unreachable {
				t.Errorf("%v: unreachable %v, want %v", err, got, tc.unreachable)
			}
		})
	}
}

// TestFenceReadsLiveOncePerMaxAge: one live read serves the writes entered within LiveMaxAge of when it
// was sent, concurrent writes wait for the read in flight, and a failed read is never reused.
func TestFenceReadsLiveOncePerMaxAge(t *testing.T) {
	c := newCluster(func(c *v1alpha1.VitalsCluster) { c.UID = "u1" })
	l := &liveCluster{c: c.DeepCopy(), hold: make(chan struct{})}
	v := fenceEnv(t, nil, nil, l)
	p := v.e.Begin(context.Background(), c, "deorbit", nil, Scope{})
	enter := func() error {
		_, cancel, err := fencing.Enter(fencing.With(context.Background(), p.Fence()))
		if err == nil {
			cancel()
		}
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() { errs[i] = enter() })
	}
	for l.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(l.hold)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := l.reads.Load(); n != 1 {
		t.Fatalf("50 concurrent writes read the cluster %d times, want 1", n)
	}
	v.clock.Step(DefaultLiveMaxAge - time.Millisecond)
	if err := enter(); err != nil || l.reads.Load() != 1 {
		t.Fatalf("a write within the read's age: %v, %d reads, want none more", err, l.reads.Load())
	}
	l.set(annotate(v1alpha1.AnnotationPaused, "true"))
	v.clock.Step(time.Millisecond)
	if r, _ := fencing.ReasonOf(enter()); r != fencing.ReasonPaused || l.reads.Load() != 2 {
		t.Fatalf("a write past the read's age: %q after %d reads, want Paused after 2", r, l.reads.Load())
	}
	l.err = errors.New("timeout")
	v.clock.Step(DefaultLiveMaxAge)
	if r, _ := fencing.ReasonOf(enter()); r != fencing.ReasonUnverified {
		t.Fatalf("a failed read: %q, want Unverified", r)
	}
	l.err = nil
	if r, _ := fencing.ReasonOf(enter()); r != fencing.ReasonPaused || l.reads.Load() != 4 {
		t.Fatalf("after a failed read: %q after %d reads, want a new read (4) and Paused", r, l.reads.Load())
	}
}

// TestDoneRecordsARefusalAsAHold: a write refused at its fence is a hold with the fence's reason (Event,
// metric, status line), and gives back the budget its Ask reserved.
func TestDoneRecordsARefusalAsAHold(t *testing.T) {
	c := newCluster(budget(1, time.Hour), func(c *v1alpha1.VitalsCluster) { c.UID = "u1" })
	v := fenceEnv(t, nil, nil, &liveCluster{c: c.DeepCopy()})
	p := v.e.Begin(context.Background(), c, "routegc", nil, Scope{})
	a := route("198.19.1.0/24", "10.0.0.9", t0.Add(-time.Hour))
	if d := p.Ask(context.Background(), a); d.Outcome != Allowed {
		t.Fatalf("asked: %s", d.Reason)
	}
	refused := &fencing.Error{Reason: fencing.ReasonPaused, Message: "paused: annotation"}
	p.Done(context.Background(), a, errors.Join(errors.New("remove routes"), refused))
	lines := p.Lines()
	if len(lines) != 1 || lines[0].Action != v1alpha1.ActionSkipped || lines[0].Reason != "Paused" {
		t.Fatalf("status lines %+v, want one Skipped line with reason Paused", lines)
	}
	select {
	case ev := <-v.events.Events:
		if !strings.Contains(ev, "Normal Paused") {
			t.Errorf("event %q, want a Normal Paused one", ev)
		}
	default:
		t.Error("no Event")
	}
	// the budget of 1 is whole again: the next action is allowed
	b := route("198.19.2.0/24", "10.0.0.9", t0.Add(-time.Hour))
	if d := v.e.Begin(context.Background(), c, "routegc", nil, Scope{}).Ask(context.Background(), b); d.Outcome != Allowed {
		t.Errorf("after a refused write: %s %s, want the budget back", d.Reason, d.Message)
	}
}

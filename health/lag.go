package health

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Defaults of the scheduling-delay grace.
const (
	// DefaultLagGrace bounds how long a liveness verdict waits for a stale result when the
	// process itself is being scheduled late (WithLagGrace).
	DefaultLagGrace = 10 * time.Second
	// lagTick is the period of the lag meter's timer.
	lagTick = 100 * time.Millisecond
	// lagWindow is how long a measured delay keeps counting after it was seen.
	lagWindow = 30 * time.Second
)

// lagMeter measures the process's own scheduling delay: a goroutine asks for a timer every
// lagTick and records how late it fires. A check result that went stale while the process was
// starved of CPU (the check's goroutine waited to be scheduled like every other) is not a reason
// to restart it: liveness grants such a result as much grace as the delay measured, up to max.
// Readiness never does: a starved process is not ready to serve.
type lagMeter struct {
	clock clock.WithTicker
	max   time.Duration
	// last is when the meter's timer last fired (Unix nanoseconds); 0 before it runs.
	last atomic.Int64
	// worst is the largest delay seen within lagWindow, and worstAt when (Unix nanoseconds).
	worst   atomic.Int64
	worstAt atomic.Int64
}

// lagHops is how many times one check cycle waits for the scheduler: the period's timer, the run's
// goroutine, the check's own wait (a sleep, a socket) and the result's delivery. A process late by
// L on each can see a result age by about lagHops*L more than the interval.
const lagHops = 4

// recent returns the worst recent lateness of the meter's timer, or the lateness of the tick it is
// waiting for right now, whichever is larger; 0 when the meter does not run.
func (l *lagMeter) recent(now time.Time) time.Duration {
	if l == nil || l.max <= 0 {
		return 0
	}
	last := l.last.Load()
	if last == 0 {
		return 0
	}
	g := now.Sub(time.Unix(0, last)) - lagTick // the pending tick's lateness so far
	if at := l.worstAt.Load(); at != 0 && now.Sub(time.Unix(0, at)) <= lagWindow {
		g = max(g, time.Duration(l.worst.Load()))
	}
	return max(g, 0)
}

// grace returns the delay to forgive at now: lagHops times the recent lateness, capped at max.
func (l *lagMeter) grace(now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	return min(lagHops*l.recent(now), l.max)
}

// explains reports whether a run that failed on its deadline (timeout) at now may owe it to the
// process's own scheduling delay: the recent lateness reaches a quarter of the timeout.
func (l *lagMeter) explains(now time.Time, timeout time.Duration) bool {
	r := l.recent(now)
	return r > 0 && r >= timeout/4
}

// observe records one tick that fired at now, late by late.
func (l *lagMeter) observe(now time.Time, late time.Duration) {
	l.last.Store(now.UnixNano())
	n := now.UnixNano()
	if late >= time.Duration(l.worst.Load()) || n-l.worstAt.Load() > int64(lagWindow) {
		l.worst.Store(int64(late))
		l.worstAt.Store(n)
	}
}

// run ticks until ctx is done.
func (l *lagMeter) run(ctx context.Context) {
	l.last.Store(l.clock.Now().UnixNano())
	for {
		due := l.clock.Now().Add(lagTick)
		t := l.clock.NewTimer(lagTick)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		now := l.clock.Now()
		l.observe(now, max(now.Sub(due), 0))
	}
}

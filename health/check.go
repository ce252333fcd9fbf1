package health

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

var (
	// ErrTimeout is wrapped by the error of a run that passed its timeout.
	ErrTimeout = errors.New("check timed out")
	// ErrStillRunning is the error of a run skipped because the previous run, already timed out,
	// has not returned yet (its function ignores its context).
	ErrStillRunning = errors.New("previous run still running")
	// ErrStale is wrapped by the error of a result older than interval+timeout.
	ErrStale = errors.New("stale result")
	// ErrNoResult is the reason of a check that has no result yet.
	ErrNoResult = errors.New("no result yet")
	// ErrPanic is wrapped by the error of a run whose function panicked.
	ErrPanic = errors.New("check panicked")
)

// maxInitialDelay bounds the random delay before a check's first run.
const maxInitialDelay = 100 * time.Millisecond

// checkEntry is a registered Check with its state.
type checkEntry struct {
	entryBase
	m *Manager
	c Check

	mu sync.Mutex
	// startedAt: when the check began running (start of its start period); zero before Start.
	startedAt   time.Time
	status      Status
	lastErr     error
	lastRun     time.Time
	lastSuccess time.Time
	lastFailure time.Time
	succ, fail  int
	duration    time.Duration
	// detail: Check.Detail after the last successful run ("" after a failure).
	detail string
	// lagFails counts the consecutive failures that were deadlines the process's own scheduling
	// delay explains (see lagMeter.explains), and lagFailSince is when the first of them was
	// recorded: while every consecutive failure is one, liveness waits up to the lag grace's cap.
	lagFails     int
	lagFailSince time.Time

	// orphan, owned by the runner goroutine, receives the result of a timed-out run whose function
	// has not returned yet; nil when none is outstanding.
	orphan chan error
}

func newCheckEntry(m *Manager, c Check) *checkEntry {
	return &checkEntry{
		entryBase: entryBase{name: c.Name, kind: KindCheck, probes: c.Probes, severity: c.Severity},
		m:         m,
		c:         c,
		status:    StatusUnknown,
	}
}

func (e *checkEntry) evaluate(now time.Time) eval {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := eval{r: Result{
		Status:               e.status,
		LastRun:              e.lastRun,
		LastSuccess:          e.lastSuccess,
		LastFailure:          e.lastFailure,
		ConsecutiveSuccesses: e.succ,
		ConsecutiveFailures:  e.fail,
		Duration:             e.duration,
		LastErr:              e.lastErr,
	}}
	if e.status == StatusOK {
		ev.r.Detail = e.detail
	}
	switch e.status {
	case StatusFailed:
		ev.r.Err = e.lastErr
	case StatusUnknown:
		ev.r.Err = ErrNoResult
		if e.lastErr != nil && e.fail > 0 {
			ev.r.Err = fmt.Errorf("%w: %w", ErrNoResult, e.lastErr)
		}
	}
	if !e.lastRun.IsZero() {
		staleAt := e.lastRun.Add(e.c.Interval + e.c.Timeout)
		if now.After(staleAt) {
			ev.r.Stale = true
			ev.r.Status = StatusFailed
			ev.r.Err = fmt.Errorf("%w: last result at %s is older than interval+timeout (%s)",
				ErrStale, e.lastRun.UTC().Format(time.RFC3339), e.c.Interval+e.c.Timeout)
			if lag := e.m.lag.grace(now); lag > 0 && !now.After(staleAt.Add(lag)) {
				// The process itself was not scheduled (the lag meter was late too): liveness
				// waits for the check to get its turn, readiness does not.
				ev.grace, ev.graceWhy = true, "scheduling delay "+lag.Round(time.Millisecond).String()
				ev.changesAt = staleAt.Add(lag).Add(time.Nanosecond)
			}
		} else {
			ev.changesAt = staleAt.Add(time.Nanosecond)
		}
	}
	if ev.r.Status == StatusUnknown {
		// Below its failure threshold a check does not fail liveness or startup: a restart needs
		// FailureThreshold real results. Without any result it fails them once its first result is
		// overdue (start period, then interval+timeout).
		switch {
		case e.fail > 0:
			ev.grace, ev.graceWhy = true, fmt.Sprintf("%d of %d failures", e.fail, e.c.FailureThreshold)
		case e.startedAt.IsZero():
			ev.grace, ev.graceWhy = true, "not started"
			if e.c.StartPeriod > 0 {
				ev.graceWhy = "start period"
			}
		default:
			due := e.startedAt.Add(e.c.StartPeriod + e.c.Interval + e.c.Timeout)
			if !now.After(due) {
				ev.grace, ev.graceWhy = true, "first result due"
				if e.c.StartPeriod > 0 && now.Before(e.startedAt.Add(e.c.StartPeriod)) {
					ev.graceWhy = "start period"
				}
				if ev.changesAt.IsZero() || due.Before(ev.changesAt) {
					ev.changesAt = due.Add(time.Nanosecond)
				}
			}
		}
	}
	if !ev.grace && ev.r.Status == StatusFailed && !ev.r.Stale && e.fail > 0 && e.lagFails == e.fail {
		// Every failure since the last success was a timeout while the process was starved.
		if end := e.lagFailSince.Add(e.m.lag.max); !now.After(end) {
			ev.grace, ev.graceWhy = true, fmt.Sprintf("scheduling delay: %d timeouts while the process ran late", e.fail)
			if ev.changesAt.IsZero() || end.Before(ev.changesAt) {
				ev.changesAt = end.Add(time.Nanosecond)
			}
		}
	}
	if !ev.grace && e.c.StartPeriod > 0 && ev.r.Status != StatusOK {
		end := e.startedAt.Add(e.c.StartPeriod)
		if e.startedAt.IsZero() || now.Before(end) {
			ev.grace, ev.graceWhy = true, "start period"
			if !e.startedAt.IsZero() && (ev.changesAt.IsZero() || end.Before(ev.changesAt)) {
				ev.changesAt = end
			}
		}
	}
	return ev
}

// record stores the result of one run, applying the thresholds.
func (e *checkEntry) record(at time.Time, d time.Duration, err error) {
	detail := ""
	if err == nil && e.c.Detail != nil {
		detail = e.c.Detail()
	}
	e.mu.Lock()
	e.detail = detail
	e.lastRun = at
	e.duration = d
	if err == nil {
		e.succ++
		e.fail = 0
		e.lagFails = 0
		e.lastSuccess = at
		if e.status != StatusOK && e.succ >= e.c.SuccessThreshold {
			e.status = StatusOK
		}
	} else {
		e.fail++
		e.succ = 0
		e.lastFailure = at
		e.lastErr = err
		if (errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded)) && e.m.lag.explains(at, e.c.Timeout) {
			if e.lagFails == 0 {
				e.lagFailSince = at
			}
			e.lagFails++
		} else {
			e.lagFails = 0
		}
		if e.status != StatusFailed && e.fail >= e.c.FailureThreshold {
			e.status = StatusFailed
		}
	}
	e.mu.Unlock()
	e.metrics.observeRun(d, err == nil)
	e.m.changed()
}

// loop runs the check on its jittered schedule until ctx is done.
func (e *checkEntry) loop(ctx context.Context) {
	defer e.m.wg.Done()
	clk := e.m.clock
	delay := e.m.jitter(min(e.c.Interval/10, maxInitialDelay))
	for {
		if delay > 0 {
			t := clk.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		} else if ctx.Err() != nil {
			return
		}
		start := clk.Now()
		if !e.runOnce(ctx, clk, start) {
			return
		}
		// The period is shortened by 5-10% so that jitter never lets a result go stale.
		period := e.c.Interval - e.c.Interval/20 - e.m.jitter(e.c.Interval/20)
		delay = start.Add(period).Sub(clk.Now())
	}
}

// runOnce runs the check once and records its result. It returns false when ctx is done.
func (e *checkEntry) runOnce(ctx context.Context, clk clock.WithTicker, start time.Time) bool {
	if e.orphan != nil {
		select {
		case <-e.orphan:
			e.orphan = nil
		default:
			e.record(start, 0, ErrStillRunning)
			return true
		}
	}
	runCtx, cancel := e.runContext(ctx)
	done := make(chan error, 1)
	go func() { done <- e.safeRun(runCtx) }()
	timer := clk.NewTimer(e.c.Timeout)
	select {
	case err := <-done:
		timer.Stop()
		cancel()
		now := clk.Now()
		e.record(now, now.Sub(start), err)
		return true
	case <-timer.C():
		cancel()
		e.orphan = done
		e.record(clk.Now(), e.c.Timeout, fmt.Errorf("%w after %s", ErrTimeout, e.c.Timeout))
		return true
	case <-ctx.Done():
		cancel()
		// The run sees its cancellation; wait for it, at most its timeout, so that a stopped manager leaves no
		// run behind that still reads what its owner tears down after the stop.
		select {
		case <-done:
		case <-timer.C():
		}
		timer.Stop()
		return false
	}
}

// runContext returns the context of one run. With the real clock it also carries the deadline, for
// functions that pass it on (HTTP clients, dialers); with an injected clock only cancellation does.
func (e *checkEntry) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, real := e.m.clock.(clock.RealClock); real {
		return context.WithTimeout(ctx, e.c.Timeout)
	}
	return context.WithCancel(ctx)
}

// safeRun calls the check function, turning a panic into an error.
func (e *checkEntry) safeRun(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, p)
			e.m.log.Error("health check panicked", "name", e.name, "panic", fmt.Sprint(p),
				"stack", string(debug.Stack()))
		}
	}()
	return e.c.Run(ctx)
}

// startCheckLocked starts a check's goroutine; m.mu is held and the manager is running.
func (m *Manager) startCheckLocked(e *checkEntry) {
	e.mu.Lock()
	e.startedAt = m.clock.Now()
	e.mu.Unlock()
	m.wg.Add(1)
	go e.loop(m.ctx)
}

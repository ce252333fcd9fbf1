package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"
)

// SandboxFailureReason is the reason of the Event kubelet records when it cannot create a pod's sandbox,
// which includes every failed CNI ADD.
const SandboxFailureReason = "FailedCreatePodSandBox"

// EventFieldSelector selects kubelet's sandbox failures on the server. The Events API cannot select by
// source host (its selectable fields are involvedObject.*, reason, reportingComponent, source (the
// component), type and metadata.*), so the node is matched on the client.
const EventFieldSelector = "involvedObject.kind=Pod,reason=" + SandboxFailureReason + ",source=kubelet"

// EventSource turns kubelet's FailedCreatePodSandBox Events about pods on one node into failed CNI ADD
// reports. It lists then watches core/v1 Events (no cache of the objects is kept: only each event's UID
// and count), and reports each new occurrence once: an Event seen again with a higher count reports
// the difference. Events that exist when it starts are history, not news: they are not reported.
type EventSource struct {
	Client   kubernetes.Interface
	NodeName string
	Reporter Reporter
	// Heartbeat, when set, beats every BeatPeriod while the source's loop runs, whether or not the API
	// server answers: liveness must not depend on a remote service.
	Heartbeat  Beater
	BeatPeriod time.Duration
	// RetryDelay after a failed list; default 2s.
	RetryDelay time.Duration
	Clock      clock.WithTicker
	Log        *slog.Logger
	// Synced, when set, is called after each successful list (tests wait on it).
	Synced func()

	seen    seenSet
	started time.Time
}

// maxSeen bounds the Events remembered: past it, the older half is forgotten. An Event forgotten and
// then seen again counts in full, so a storm of more than maxSeen distinct failures may over-count: the
// budget is long exhausted by then.
const maxSeen = 8192

// seenSet remembers each Event's count in two generations; when the current one holds maxSeen/2
// entries it becomes the previous one, and the previous one is dropped.
type seenSet struct {
	cur, prev map[types.UID]int32
}

func (s *seenSet) reset() { s.cur, s.prev = map[types.UID]int32{}, nil }

func (s *seenSet) get(uid types.UID) (int32, bool) {
	if n, ok := s.cur[uid]; ok {
		return n, true
	}
	n, ok := s.prev[uid]
	return n, ok
}

func (s *seenSet) put(uid types.UID, n int32) {
	if _, ok := s.cur[uid]; !ok && len(s.cur) >= maxSeen/2 {
		s.prev, s.cur = s.cur, make(map[types.UID]int32, maxSeen/2)
	}
	s.cur[uid] = n
}

func (s *seenSet) remove(uid types.UID) {
	delete(s.cur, uid)
	delete(s.prev, uid)
}

// keepOnly forgets every Event not in present.
func (s *seenSet) keepOnly(present map[types.UID]bool) {
	for _, m := range []map[types.UID]int32{s.cur, s.prev} {
		for uid := range m {
			if !present[uid] {
				delete(m, uid)
			}
		}
	}
}

func (s *seenSet) len() int { return len(s.cur) + len(s.prev) }

// Run lists and watches until ctx is done.
func (s *EventSource) Run(ctx context.Context) error {
	if s.Client == nil || s.NodeName == "" || s.Reporter == nil {
		return errors.New("event source: Client, NodeName and Reporter are required")
	}
	clk := s.clock()
	log := s.log()
	period := s.BeatPeriod
	if period <= 0 {
		period = 5 * time.Second
	}
	retry := s.RetryDelay
	if retry <= 0 {
		retry = 2 * time.Second
	}
	// Event timestamps have a resolution of one second.
	s.started = clk.Now().Truncate(time.Second)
	s.seen.reset()
	beat := clk.NewTicker(period)
	defer beat.Stop()
	s.doBeat()
	baseline := true
	for ctx.Err() == nil {
		rv, err := s.list(ctx, baseline)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("list kubelet sandbox events failed", "node", s.NodeName, "err", err)
			if !s.wait(ctx, clk.After(retry), beat) {
				break
			}
			continue
		}
		baseline = false
		if s.Synced != nil {
			s.Synced()
		}
		s.watch(ctx, rv, beat)
	}
	return nil
}

// wait waits for ch while beating; false when ctx is done.
func (s *EventSource) wait(ctx context.Context, ch <-chan time.Time, beat clock.Ticker) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-ch:
			return true
		case <-beat.C():
			s.doBeat()
		}
	}
}

func (s *EventSource) doBeat() {
	if s.Heartbeat != nil {
		s.Heartbeat.Beat()
	}
}

// list reads every matching Event, pages of 500, and returns the resource version to watch from.
func (s *EventSource) list(ctx context.Context, baseline bool) (string, error) {
	opts := metav1.ListOptions{FieldSelector: EventFieldSelector, Limit: 500}
	present := map[types.UID]bool{}
	var rv string
	for {
		list, err := s.Client.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return "", fmt.Errorf("list events (%s): %w", EventFieldSelector, err)
		}
		for i := range list.Items {
			present[list.Items[i].UID] = true
			s.observe(ctx, &list.Items[i], baseline)
		}
		rv = list.ResourceVersion
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	// Forget events that expired while we were not watching.
	s.seen.keepOnly(present)
	return rv, nil
}

// watch follows changes from rv until the watch cannot resume (resource version too old) or ctx ends.
func (s *EventSource) watch(ctx context.Context, rv string, beat clock.Ticker) {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, eventWatcher{s.Client})
	if err != nil {
		s.log().Warn("watch kubelet sandbox events failed", "node", s.NodeName, "err", err)
		return
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C():
			s.doBeat()
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if e, ok := ev.Object.(*corev1.Event); ok {
					s.observe(ctx, e, false)
				}
			case watch.Deleted:
				if e, ok := ev.Object.(*corev1.Event); ok {
					s.seen.remove(e.UID)
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				s.log().Info("watch of kubelet sandbox events ended, listing again", "node", s.NodeName, "reason", err)
				return
			}
			s.doBeat()
		}
	}
}

// observe records one Event and reports the occurrences that are new.
func (s *EventSource) observe(ctx context.Context, e *corev1.Event, baseline bool) {
	if !s.onThisNode(e) || e.Reason != SandboxFailureReason || e.InvolvedObject.Kind != "Pod" {
		return
	}
	n := occurrences(e)
	prev, known := s.seen.get(e.UID)
	if known && n <= prev {
		return
	}
	s.seen.put(e.UID, n)
	if baseline {
		return
	}
	delta := n - prev
	if !known && lastSeen(e).Before(s.started) {
		// Found on a later list, but it happened before we started: history.
		return
	}
	rep := Report{
		Op:     OpAdd,
		Result: Failure,
		Pod:    e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name,
		Error:  e.Message,
		Source: "kube-events",
		Count:  int(delta),
		Time:   lastSeen(e),
	}
	if e.InvolvedObject.Namespace == "" || e.InvolvedObject.Name == "" {
		rep.Pod = ""
	}
	if err := s.Reporter.Report(ctx, rep); err != nil {
		s.log().Warn("report of kubelet sandbox event rejected", "event", e.Namespace+"/"+e.Name, "err", err)
	}
}

func (s *EventSource) onThisNode(e *corev1.Event) bool {
	return e.Source.Host == s.NodeName || e.ReportingInstance == s.NodeName
}

// occurrences is how many times an Event happened, whichever API wrote it.
func occurrences(e *corev1.Event) int32 {
	n := e.Count
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	if n < 1 {
		n = 1
	}
	return n
}

// lastSeen is when an Event last happened.
func lastSeen(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}

type eventWatcher struct{ c kubernetes.Interface }

func (w eventWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = EventFieldSelector
	return w.c.CoreV1().Events("").Watch(ctx, opts)
}

func (s *EventSource) clock() clock.WithTicker {
	if s.Clock != nil {
		return s.Clock
	}
	return clock.RealClock{}
}

func (s *EventSource) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

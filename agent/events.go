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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/internal/base/backoff"
)

// SandboxFailureReason is the reason of the Event kubelet records when it cannot create a pod's sandbox,
// which includes every failed CNI ADD.
const SandboxFailureReason = "FailedCreatePodSandBox"

// EventFieldSelector selects kubelet's sandbox failures on the server. The Events API cannot select by
// source host (its selectable fields are involvedObject.*, reason, reportingComponent, source (the
// component), type and metadata.*), so the node is matched on the client.
const EventFieldSelector = "involvedObject.kind=Pod,reason=" + SandboxFailureReason + ",source=kubelet"

// EventClient lists and watches core/v1 Events of every namespace (*Kube is one).
type EventClient interface {
	ListEvents(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error)
	WatchEvents(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Verdicts on a kubelet sandbox Event about this node (the metric vitals_agent_kube_events_total).
const (
	VerdictCounted    = "counted"     // consistent evidence of a failed CNI ADD: reported
	VerdictNotNetwork = "not-network" // a sandbox failure, but not the network's (ClassifySandboxFailure)
	VerdictStale      = "stale"       // last seen more than MaxAge ago, or in the future
	VerdictNoPod      = "no-pod"      // no such pod is bound to this node
	VerdictUIDChanged = "uid-mismatch"
	VerdictPodRunning = "pod-running" // the pod's containers run: its sandbox exists
	VerdictPodDone    = "pod-done"    // the pod has finished: no sandbox is being created
)

// EventSource turns kubelet's FailedCreatePodSandBox Events about pods on one node into failed CNI ADD
// reports, when they are consistent evidence. Anyone allowed to create Events in a namespace can write
// one that names any node and any text, so an Event counts only when:
//
//   - its message is a network failure (ClassifySandboxFailure), not an image or runtime one;
//   - it happened recently (within MaxAge of now, by its last timestamp);
//   - the pod it names is bound to this node (Pods, an informer on spec.nodeName), with the UID the
//     Event names, and is not running (no running container) nor finished.
//
// It lists then watches core/v1 Events (no cache of the objects is kept: only each event's UID and
// count), and reports each new occurrence once: an Event seen again with a higher count reports the
// difference, at most MaxEventDelta at a time (a count patched to 2^31 is one bounded step, not two
// billion). Events that exist when it starts are history, not news: they are not reported. The report
// names the pod and the Event, never the Event's message: the message is the writer's text.
type EventSource struct {
	Client   EventClient
	NodeName string
	// Pods finds the pods bound to this node; required.
	Pods     PodLookup
	Reporter Reporter
	// Heartbeat, when set, beats every BeatPeriod while the source's loop runs, whether or not the API
	// server answers: liveness must not depend on a remote service.
	Heartbeat  Beater
	BeatPeriod time.Duration
	// MaxAge: older Events are not evidence; default DefaultEventMaxAge.
	MaxAge time.Duration
	// PodWait: how long an Event waits for its pod to show in Pods (the Event may be seen first);
	// default 5s.
	PodWait time.Duration
	// Backoff between failed lists and failed watches; default DefaultAPIBackoff.
	Backoff wait.Backoff
	// Rand draws the backoff's jitter (nil: math/rand).
	Rand  backoff.Rand
	Clock clock.WithTicker
	Log   *slog.Logger
	// Synced, when set, is called after each successful list (tests wait on it).
	Synced func()
	// OnVerdict, when set, is called with the verdict on each Event about this node that is news.
	OnVerdict func(verdict string)

	seen    seenSet
	started time.Time
	pending []pendingEvent
}

// DefaultEventMaxAge is how old a kubelet Event may be and still count.
const DefaultEventMaxAge = 5 * time.Minute

// MaxEventDelta is the most occurrences one update of an Event counts for.
const MaxEventDelta = 10

// maxClockSkew is how far in the future an Event's timestamp may be (the kubelet's clock, not ours).
const maxClockSkew = time.Minute

// pendingEvent waits for its pod to show in the pod index (the Event may arrive first).
type pendingEvent struct {
	e     *corev1.Event
	delta int
	since time.Time
}

// maxPending bounds the Events waiting for their pod.
const maxPending = 256

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
	if s.Client == nil || s.NodeName == "" || s.Reporter == nil || s.Pods == nil {
		return errors.New("event source: Client, NodeName, Pods and Reporter are required")
	}
	clk := s.clock()
	log := s.log()
	period := s.BeatPeriod
	if period <= 0 {
		period = 5 * time.Second
	}
	retry := newRetrier(s.Backoff, s.Rand)
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
			d := retry.fail(clk.Now())
			log.Warn("list kubelet sandbox events failed", "node", s.NodeName, "retry_in", d, "err", err)
			if !s.wait(ctx, clk.After(d), beat) {
				break
			}
			continue
		}
		retry.ok()
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
			s.retryPending(ctx)
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
		list, err := s.Client.ListEvents(ctx, opts)
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
	w := &backoffWatcher{clock: s.clock(), r: newRetrier(s.Backoff, s.Rand), watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = EventFieldSelector
		return s.Client.WatchEvents(ctx, opts)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, w)
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
			s.retryPending(ctx)
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

// observe records one Event and reports the occurrences that are new, if the Event is evidence.
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
	if !known && lastSeen(e).Before(s.started) {
		// Found on a later list, but it happened before we started: history.
		return
	}
	delta := int(min(n-prev, MaxEventDelta))
	s.judge(ctx, e, delta, s.clock().Now())
}

// judge decides whether an Event is evidence, and reports it if it is. An Event whose pod is not in
// the index yet waits (at most PodWait) for it.
func (s *EventSource) judge(ctx context.Context, e *corev1.Event, delta int, since time.Time) {
	verdict, pod := s.verdict(e)
	wait := s.PodWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	if verdict == VerdictNoPod && s.clock().Now().Sub(since) < wait {
		if len(s.pending) >= maxPending {
			s.pending = s.pending[1:]
		}
		s.pending = append(s.pending, pendingEvent{e: e, delta: delta, since: since})
		return
	}
	if s.OnVerdict != nil {
		s.OnVerdict(verdict)
	}
	if verdict != VerdictCounted {
		s.log().Debug("kubelet sandbox event not counted", "event", e.Namespace+"/"+e.Name, "verdict", verdict)
		return
	}
	rep := Report{
		Op:     OpAdd,
		Result: Failure,
		Pod:    pod.Namespace + "/" + pod.Name,
		Error:  fmt.Sprintf("kubelet could not set up the pod's network (Event %s/%s)", e.Namespace, e.Name),
		Source: "kube-events",
		Count:  delta,
		Time:   lastSeen(e),
	}
	if err := s.Reporter.Report(ctx, rep); err != nil {
		s.log().Warn("report of kubelet sandbox event rejected", "event", e.Namespace+"/"+e.Name, "err", err)
	}
}

// verdict checks an Event against the clock, its message and the pod it names.
func (s *EventSource) verdict(e *corev1.Event) (string, *corev1.Pod) {
	maxAge := s.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultEventMaxAge
	}
	now := s.clock().Now()
	if t := lastSeen(e); now.Sub(t) > maxAge || t.Sub(now) > maxClockSkew {
		return VerdictStale, nil
	}
	if ClassifySandboxFailure(e.Message) != SandboxNetwork {
		return VerdictNotNetwork, nil
	}
	pod, ok := s.Pods.Pod(e.InvolvedObject.Namespace, e.InvolvedObject.Name)
	if !ok || pod.Spec.NodeName != s.NodeName {
		return VerdictNoPod, nil
	}
	if e.InvolvedObject.UID != "" && e.InvolvedObject.UID != pod.UID {
		return VerdictUIDChanged, nil
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return VerdictPodDone, nil
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return VerdictPodRunning, nil
		}
	}
	return VerdictCounted, pod
}

// retryPending judges again the Events that waited for their pod.
func (s *EventSource) retryPending(ctx context.Context) {
	if len(s.pending) == 0 {
		return
	}
	waiting := s.pending
	s.pending = nil
	for _, p := range waiting {
		s.judge(ctx, p.e, p.delta, p.since)
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

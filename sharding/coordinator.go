package sharding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
)

// Labels and annotations of the shard Leases.
const (
	// LabelSet names the set of replicas (Options.Name) a Lease belongs to.
	LabelSet = "vitals.vitalsproject.io/shard-set"
	// LabelRole is "member" or "range".
	LabelRole = "vitals.vitalsproject.io/shard-role"
	// LabelRange is the index of a range Lease's range.
	LabelRange = "vitals.vitalsproject.io/shard-range"
	// AnnotationBounds is the hash range of a range Lease ("0x…-0x…").
	AnnotationBounds = "vitals.vitalsproject.io/shard-bounds"
	// AnnotationHeld lists, on a member Lease, the ranges the member holds.
	AnnotationHeld = "vitals.vitalsproject.io/shard-held"

	roleMember = "member"
	roleRange  = "range"
)

// Defaults of Options: the safety margin (8s) exceeds the operator's default write timeout (5s, package
// fencing), and the margin plus the renew interval (13s) stays under the lease duration, so that a replica
// keeps acting through one failed renewal and stops before another may take over.
const (
	DefaultLeaseDuration = 20 * time.Second
	DefaultRenewInterval = 5 * time.Second
	DefaultSafetyMargin  = 8 * time.Second
)

// Options configure a Coordinator.
type Options struct {
	// Leases reads and writes the Leases (required).
	Leases coordclient.LeasesGetter
	// Namespace of the Leases (required).
	Namespace string
	// Name of the set of replicas: the Leases are <Name>-member-<identity> and <Name>-range-<index>
	// (default "vitals-operator").
	Name string
	// Identity of this replica (required), unique among the replicas.
	Identity string
	// Ranges the hash space is cut into: a power of two (default DefaultRanges). All replicas must agree.
	Ranges int
	// LeaseDuration: a range whose Lease was not renewed for this long may be taken over.
	LeaseDuration time.Duration
	// RenewInterval between two rounds (renewals, membership, assignment).
	RenewInterval time.Duration
	// SafetyMargin: a replica stops acting on a range this long before its Lease could expire, and writes
	// a release this long after it stopped acting. It must exceed the longest single action.
	// SafetyMargin + RenewInterval must be less than LeaseDuration.
	SafetyMargin time.Duration
	// Clock (default the real one).
	Clock clock.WithTicker
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Metrics (nil: unregistered).
	Metrics *Metrics
}

func (o *Options) defaults() error {
	if o.Leases == nil || o.Namespace == "" || o.Identity == "" {
		return errors.New("sharding: Leases, Namespace and Identity are required")
	}
	if o.Name == "" {
		o.Name = "vitals-operator"
	}
	if o.Ranges == 0 {
		o.Ranges = DefaultRanges
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = DefaultRenewInterval
	}
	if o.SafetyMargin == 0 {
		o.SafetyMargin = DefaultSafetyMargin
	}
	if o.RenewInterval <= 0 || o.SafetyMargin <= 0 || o.SafetyMargin+o.RenewInterval >= o.LeaseDuration {
		return fmt.Errorf("sharding: expected safety margin (%s) + renew interval (%s) < lease duration (%s), all positive",
			o.SafetyMargin, o.RenewInterval, o.LeaseDuration)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return nil
}

// Coordinator is one replica's membership and range ownership. Start runs it; Holds is the fenced answer
// to "may this replica act on this cluster now".
type Coordinator struct {
	opts  Options
	space Space
	lease coordclient.LeaseInterface

	mu sync.Mutex
	// until: the ranges this replica holds, each with the end of its fenced validity (last renewal sent +
	// lease duration - safety margin).
	until map[int]time.Time
	// version: the resourceVersion of each held range's Lease as this replica last wrote it; written:
	// that Lease (renewed from it, without waiting for the round's list).
	version map[int]string
	written map[int]*coordinationv1.Lease
	// releasing: ranges given up (no longer acted on), with the time their release may be written.
	releasing map[int]time.Time
	// seen: each foreign Lease's resourceVersion and when this replica first saw it.
	seen    map[string]observation
	members []string
	// lastRound is when the last round renewed membership successfully.
	lastRound time.Time
	lastErr   error
	changed   chan struct{}
	gen       uint64
}

type observation struct {
	version string
	at      time.Time
}

// New returns a Coordinator; nothing runs until Start.
func New(o Options) (*Coordinator, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	sp, err := NewSpace(o.Ranges)
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	return &Coordinator{
		opts: o, space: sp, lease: o.Leases.Leases(o.Namespace),
		until: map[int]time.Time{}, version: map[int]string{}, written: map[int]*coordinationv1.Lease{}, releasing: map[int]time.Time{},
		seen: map[string]observation{}, changed: make(chan struct{}),
	}, nil
}

// Space is the cut of the hash space.
func (c *Coordinator) Space() Space { return c.space }

// Identity of this replica.
func (c *Coordinator) Identity() string { return c.opts.Identity }

// Holds reports whether this replica may act on the object with this UID now: it holds the UID's range
// and the range's fenced validity has not run out.
func (c *Coordinator) Holds(uid types.UID) bool {
	i := c.space.Of(uid)
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.until[i]
	return ok && now.Before(u)
}

// Validity is the end of this replica's fenced validity for the object with this UID: the send time of the
// last successful renewal of its range, plus the lease duration, minus the safety margin. ok is false when
// this replica does not hold the range (any more); until may lie in the past (renewals failing).
func (c *Coordinator) Validity(uid types.UID) (until time.Time, ok bool) {
	i := c.space.Of(uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok = c.until[i]
	return until, ok
}

// Why says, for a UID this replica may not act on, why (for the remediation policy's hold message).
func (c *Coordinator) Why(uid types.UID) string {
	i := c.space.Of(uid)
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.until[i]; ok {
		if now.Before(u) {
			return ""
		}
		return fmt.Sprintf("replica %s could not renew shard range %d (%s) in time: it stopped acting on it at %s",
			c.opts.Identity, i, c.space.Bounds(i), u.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("replica %s does not hold shard range %d (%s)", c.opts.Identity, i, c.space.Bounds(i))
}

// Held is the ranges this replica holds (acts on), sorted, and a channel closed at their next change.
func (c *Coordinator) Held() ([]int, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heldLocked(), c.changed
}

// Share is how many of the ranges this replica holds, of all.
func (c *Coordinator) Share() (held, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.until), c.space.Len()
}

// Generation counts the changes of the held ranges.
func (c *Coordinator) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Members is the live members as this replica saw them in its last round, sorted.
func (c *Coordinator) Members() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.members)
}

func (c *Coordinator) heldLocked() []int {
	out := make([]int, 0, len(c.until))
	for i := range c.until {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// Describe names the held ranges, for logs, the readiness detail and the member Lease.
func (c *Coordinator) Describe() string {
	held, _ := c.Held()
	return c.describe(held)
}

func (c *Coordinator) describe(held []int) string {
	if len(held) == 0 {
		return "none"
	}
	parts := make([]string, len(held))
	for k, i := range held {
		parts[k] = strconv.Itoa(i)
	}
	return fmt.Sprintf("%d of %d: %s", len(held), c.space.Len(), strings.Join(parts, ","))
}

// Detail names the held ranges and the members seen, for the readiness check's detail while it passes
// (the check's failure names the held ranges itself).
func (c *Coordinator) Detail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("holds %s; %d members", c.describe(c.heldLocked()), len(c.members))
}

// Check fails while this replica's membership has not been renewed for a lease duration: the others
// count it out and take its ranges. It passes while it holds no range (more replicas than ranges).
func (c *Coordinator) Check(context.Context) error {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastRound.IsZero() {
		if c.lastErr != nil {
			return fmt.Errorf("shard membership not written yet: %w", c.lastErr)
		}
		return errors.New("shard membership not written yet")
	}
	if now.Sub(c.lastRound) >= c.opts.LeaseDuration {
		err := fmt.Errorf("shard membership not renewed since %s (holds %s)", c.lastRound.UTC().Format(time.RFC3339), c.describe(c.heldLocked()))
		if c.lastErr != nil {
			err = fmt.Errorf("%w: %w", err, c.lastErr)
		}
		return err
	}
	return nil
}

// NeedLeaderElection: every replica runs its own coordinator.
func (c *Coordinator) NeedLeaderElection() bool { return false }

// Start writes this replica's membership, then runs two loops every RenewInterval until ctx ends: the
// renewals of its own Leases (its membership and the ranges it holds) and the assignment (the list of the
// set, releases, takes).
//   - The first assignment comes a renew interval after the membership was written, so that replicas
//     started together see each other before any takes a range: otherwise the first would take every
//     range, list every cluster and pass them, and give most of them up a round later.
//   - The two loops run apart, so that a slow list or take (an API server loaded by thousands of
//     clusters) never delays a renewal past the fenced validity, which would make the ranges lapse and
//     the informers list every cluster again, loading the API server more (docs/benchmarks.md, issue 17).
//
// When ctx ends it stops acting on every range, waits the safety margin, releases its ranges and removes
// its membership, so that the others take over at once.
func (c *Coordinator) Start(ctx context.Context) error {
	log := c.opts.Logger
	log.Info("shard coordinator starting", "identity", c.opts.Identity, "ranges", c.space.Len(),
		"leaseDuration", c.opts.LeaseDuration, "safetyMargin", c.opts.SafetyMargin)
	c.bounded(ctx, c.renewals)
	var loops sync.WaitGroup
	loops.Go(func() { c.every(ctx, c.renewals) })
	c.every(ctx, c.assignment)
	loops.Wait()
	c.leave()
	return nil
}

// every runs step every RenewInterval until ctx ends (a step longer than that delays the next one,
// never doubles it).
func (c *Coordinator) every(ctx context.Context, step func(context.Context) error) {
	t := c.opts.Clock.NewTicker(c.opts.RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		c.bounded(ctx, step)
	}
}

// bounded runs step within the fenced validity (a step longer than it is of no use), records its error,
// and stops acting on the ranges whose fenced validity ran out.
func (c *Coordinator) bounded(ctx context.Context, step func(context.Context) error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.LeaseDuration-c.opts.SafetyMargin)
	defer cancel()
	if err := step(ctx); err != nil {
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		c.opts.Logger.Warn("shard round failed", "identity", c.opts.Identity, "err", err)
	}
	c.lapse()
}

// leave gives every range up and removes the membership.
func (c *Coordinator) leave() {
	c.mu.Lock()
	held := c.heldLocked()
	now := c.opts.Clock.Now()
	for _, i := range held {
		c.fenceLocked(i, now)
	}
	pending := len(c.releasing) > 0
	c.mu.Unlock()
	if pending {
		<-c.opts.Clock.After(c.opts.SafetyMargin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.LeaseDuration)
	defer cancel()
	c.mu.Lock()
	rel := make(map[int]time.Time, len(c.releasing))
	for i := range c.releasing {
		rel[i] = time.Time{}
	}
	c.mu.Unlock()
	c.release(ctx, rel)
	if err := c.lease.Delete(ctx, c.memberName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		c.opts.Logger.Warn("shard membership not removed", "identity", c.opts.Identity, "err", err)
	}
	c.opts.Logger.Info("shard coordinator stopped", "identity", c.opts.Identity, "released", len(rel))
}

// Round renews the membership and the held ranges and, beside them, reads every Lease of the set and
// moves towards the assignment: it gives up the ranges beyond its share, releases the ranges given up a
// safety margin ago, and takes its free or expired ranges. Start runs the two halves on loops of their
// own; tests may call Round directly.
func (c *Coordinator) Round(ctx context.Context) {
	c.bounded(ctx, func(ctx context.Context) error {
		wait := c.renewHeld(ctx)
		defer wait()
		if err := c.renewMembership(ctx); err != nil {
			return err
		}
		return c.assignment(ctx)
	})
}

// lapse stops acting on the ranges whose fenced validity ran out (renewals failing) now, not only at the
// next successful renewal.
func (c *Coordinator) lapse() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Clock.Now()
	for i, u := range c.until {
		if !now.Before(u) {
			c.opts.Logger.Warn("shard range lapsed", "identity", c.opts.Identity, "range", i, "bounds", c.space.Bounds(i))
			delete(c.until, i)
			delete(c.version, i)
			delete(c.written, i)
			c.changedLocked()
		}
	}
	c.reportLocked()
}

// renewals renews the membership and, beside it, every held range.
func (c *Coordinator) renewals(ctx context.Context) error {
	wait := c.renewHeld(ctx)
	defer wait()
	return c.renewMembership(ctx)
}

// renewHeld starts the renewals of every held range, all at once, from its Lease as this replica last
// wrote it (no read first), and returns a wait for them.
func (c *Coordinator) renewHeld(ctx context.Context) (wait func()) {
	c.mu.Lock()
	held := make(map[int]*coordinationv1.Lease, len(c.until))
	for i := range c.until {
		held[i] = c.written[i]
	}
	c.mu.Unlock()
	var renewals sync.WaitGroup
	for i, l := range held {
		renewals.Go(func() { c.renew(ctx, i, l) })
	}
	return renewals.Wait
}

// assignment reads every Lease of the set and moves towards the assignment: it gives up the ranges
// beyond its share, releases the ranges given up a safety margin ago, and takes its free or expired
// ranges. Until this replica's membership is written it does nothing: the others would not count it.
func (c *Coordinator) assignment(ctx context.Context) error {
	c.mu.Lock()
	member := !c.lastRound.IsZero()
	c.mu.Unlock()
	if !member {
		return nil
	}
	list, err := c.lease.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{LabelSet: c.opts.Name}).String()})
	if err != nil {
		return fmt.Errorf("list shard Leases in %s: %w", c.opts.Namespace, err)
	}
	now := c.opts.Clock.Now()
	ranges := make([]*coordinationv1.Lease, c.space.Len())
	members := []string{c.opts.Identity}
	c.mu.Lock()
	seen := make(map[string]observation, len(list.Items))
	for k := range list.Items {
		l := &list.Items[k]
		o, ok := c.seen[l.Name]
		if !ok || o.version != l.ResourceVersion {
			o = observation{version: l.ResourceVersion, at: now}
		}
		seen[l.Name] = o
		switch l.Labels[LabelRole] {
		case roleMember:
			if h := holder(l); h != "" && h != c.opts.Identity && l.Spec.RenewTime != nil &&
				now.Before(l.Spec.RenewTime.Add(leaseDuration(l, c.opts.LeaseDuration))) {
				members = append(members, h)
			}
		case roleRange:
			if i, err := strconv.Atoi(l.Labels[LabelRange]); err == nil && i >= 0 && i < len(ranges) && l.Name == c.rangeName(i) {
				ranges[i] = l
			}
		}
	}
	c.seen = seen
	slices.Sort(members)
	c.members = members
	holders := make([]string, len(ranges))
	for i, l := range ranges {
		holders[i] = c.holderLocked(i, l, now)
	}
	want := Assign(len(ranges), members, holders)
	// give up what is not ours any more: stop acting now, release a safety margin later
	for _, i := range c.heldLocked() {
		if want[i] != c.opts.Identity {
			c.fenceLocked(i, now)
		}
	}
	take := map[int]*coordinationv1.Lease{}
	for i, l := range ranges {
		if want[i] != c.opts.Identity {
			continue
		}
		if _, ok := c.releasing[i]; ok {
			continue // released first, taken again in a later round
		}
		if _, ok := c.until[i]; !ok && holders[i] == "" {
			take[i] = l
		}
	}
	due := map[int]time.Time{}
	for i, at := range c.releasing {
		if !now.Before(at) {
			due[i] = at
		}
	}
	c.mu.Unlock()

	c.release(ctx, due)
	// one request per range, all at once: a round's length does not grow with the ranges taken
	var wg sync.WaitGroup
	for i, l := range take {
		wg.Go(func() { c.take(ctx, i, l) })
	}
	wg.Wait()
	return nil
}

// holderLocked is who holds range i for the assignment: "" when the Lease is absent, released, or expired
// (unchanged for a lease duration as this replica saw it).
func (c *Coordinator) holderLocked(i int, l *coordinationv1.Lease, now time.Time) string {
	if l == nil {
		return ""
	}
	h := holder(l)
	if h == "" {
		return ""
	}
	if _, ok := c.until[i]; ok && h == c.opts.Identity {
		return h
	}
	o := c.seen[l.Name]
	if now.Sub(o.at) >= max(leaseDuration(l, c.opts.LeaseDuration), c.opts.LeaseDuration) {
		return ""
	}
	return h
}

// fenceLocked stops acting on range i at once and schedules its release.
func (c *Coordinator) fenceLocked(i int, now time.Time) {
	if _, ok := c.until[i]; !ok {
		return
	}
	delete(c.until, i)
	c.releasing[i] = now.Add(c.opts.SafetyMargin)
	c.opts.Logger.Info("shard range given up", "identity", c.opts.Identity, "range", i, "bounds", c.space.Bounds(i))
	c.changedLocked()
}

func (c *Coordinator) changedLocked() {
	c.gen++
	close(c.changed)
	c.changed = make(chan struct{})
}

// renew writes a held range's renewal over l, its Lease as this replica last wrote it; a conflict means
// it is lost (stop acting at once).
func (c *Coordinator) renew(ctx context.Context, i int, l *coordinationv1.Lease) {
	c.mu.Lock()
	version := c.version[i]
	c.mu.Unlock()
	if l == nil || holder(l) != c.opts.Identity || l.ResourceVersion != version {
		c.lost(i, "its Lease changed under this replica")
		return
	}
	sent := c.opts.Clock.Now()
	n := l.DeepCopy()
	n.Spec.RenewTime = &metav1.MicroTime{Time: sent}
	n.Spec.LeaseDurationSeconds = ptr(int32(c.opts.LeaseDuration / time.Second))
	got, err := c.lease.Update(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			c.lost(i, err.Error())
			return
		}
		c.opts.Logger.Warn("shard range not renewed", "identity", c.opts.Identity, "range", i, "err", err)
		return
	}
	c.mu.Lock()
	if _, ok := c.until[i]; ok {
		c.until[i] = sent.Add(c.opts.LeaseDuration - c.opts.SafetyMargin)
	}
	if _, ok := c.version[i]; ok {
		// held, or given up meanwhile (fenced by this round): its release is written over this version
		c.version[i], c.written[i] = got.ResourceVersion, got
	}
	c.mu.Unlock()
}

func (c *Coordinator) lost(i int, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.until[i]; !ok {
		return
	}
	delete(c.until, i)
	delete(c.version, i)
	delete(c.written, i)
	c.opts.Logger.Warn("shard range lost", "identity", c.opts.Identity, "range", i, "bounds", c.space.Bounds(i), "why", why)
	c.changedLocked()
}

// take acquires a free or expired range: created, or updated over the resourceVersion this replica saw
// (a conflict means another replica was faster).
func (c *Coordinator) take(ctx context.Context, i int, l *coordinationv1.Lease) {
	sent := c.opts.Clock.Now()
	ms := metav1.MicroTime{Time: sent}
	var got *coordinationv1.Lease
	var err error
	if l == nil {
		n := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: c.rangeName(i), Namespace: c.opts.Namespace,
				Labels:      map[string]string{LabelSet: c.opts.Name, LabelRole: roleRange, LabelRange: strconv.Itoa(i)},
				Annotations: map[string]string{AnnotationBounds: c.space.Bounds(i)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(c.opts.Identity), AcquireTime: &ms, RenewTime: &ms,
				LeaseDurationSeconds: ptr(int32(c.opts.LeaseDuration / time.Second)), LeaseTransitions: ptr(int32(0))},
		}
		got, err = c.lease.Create(ctx, n, metav1.CreateOptions{})
	} else {
		n := l.DeepCopy()
		n.Spec.HolderIdentity = ptr(c.opts.Identity)
		n.Spec.AcquireTime, n.Spec.RenewTime = &ms, &ms
		n.Spec.LeaseDurationSeconds = ptr(int32(c.opts.LeaseDuration / time.Second))
		tr := int32(0)
		if n.Spec.LeaseTransitions != nil {
			tr = *n.Spec.LeaseTransitions
		}
		n.Spec.LeaseTransitions = ptr(tr + 1)
		got, err = c.lease.Update(ctx, n, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			c.opts.Logger.Warn("shard range not taken", "identity", c.opts.Identity, "range", i, "err", err)
		}
		return
	}
	c.mu.Lock()
	c.until[i] = sent.Add(c.opts.LeaseDuration - c.opts.SafetyMargin)
	c.version[i], c.written[i] = got.ResourceVersion, got
	prev := ""
	if l != nil {
		prev = holder(l)
	}
	c.opts.Logger.Info("shard range taken", "identity", c.opts.Identity, "range", i, "bounds", c.space.Bounds(i), "from", prev)
	c.changedLocked()
	c.mu.Unlock()
}

// release writes the release of the ranges given up (the holder cleared), over the version this replica
// last wrote: a Lease that changed since is not this replica's to release any more.
func (c *Coordinator) release(ctx context.Context, due map[int]time.Time) {
	for i := range due {
		c.mu.Lock()
		version := c.version[i]
		delete(c.releasing, i)
		delete(c.version, i)
		delete(c.written, i)
		c.mu.Unlock()
		l, err := c.lease.Get(ctx, c.rangeName(i), metav1.GetOptions{})
		if err != nil || holder(l) != c.opts.Identity || l.ResourceVersion != version {
			continue
		}
		n := l.DeepCopy()
		n.Spec.HolderIdentity = ptr("")
		n.Spec.RenewTime = &metav1.MicroTime{Time: c.opts.Clock.Now()}
		if _, err := c.lease.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			c.opts.Logger.Warn("shard range not released (it expires instead)", "identity", c.opts.Identity, "range", i, "err", err)
			continue
		}
		c.opts.Logger.Info("shard range released", "identity", c.opts.Identity, "range", i, "bounds", c.space.Bounds(i))
	}
}

// renewMembership creates or renews this replica's member Lease, which also lists the ranges it holds.
func (c *Coordinator) renewMembership(ctx context.Context) error {
	now := c.opts.Clock.Now()
	ms := metav1.MicroTime{Time: now}
	held := c.Describe()
	l, err := c.lease.Get(ctx, c.memberName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: c.memberName(), Namespace: c.opts.Namespace,
				Labels:      map[string]string{LabelSet: c.opts.Name, LabelRole: roleMember},
				Annotations: map[string]string{AnnotationHeld: held}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(c.opts.Identity), AcquireTime: &ms, RenewTime: &ms,
				LeaseDurationSeconds: ptr(int32(c.opts.LeaseDuration / time.Second))},
		}
		_, err = c.lease.Create(ctx, l, metav1.CreateOptions{})
	case err == nil:
		if holder(l) != c.opts.Identity {
			return fmt.Errorf("member Lease %s/%s is held by %q: two replicas share the identity %q", c.opts.Namespace, l.Name, holder(l), c.opts.Identity)
		}
		l = l.DeepCopy()
		l.Spec.RenewTime = &ms
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationHeld] = held
		_, err = c.lease.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renew shard membership %s/%s: %w", c.opts.Namespace, c.memberName(), err)
	}
	c.mu.Lock()
	c.lastRound, c.lastErr = now, nil
	c.mu.Unlock()
	return nil
}

func (c *Coordinator) memberName() string {
	return c.opts.Name + "-member-" + leaseName(c.opts.Identity)
}

func (c *Coordinator) rangeName(i int) string {
	return fmt.Sprintf("%s-range-%0*d", c.opts.Name, len(strconv.Itoa(c.space.Len()-1)), i)
}

func (c *Coordinator) reportLocked() {
	c.opts.Metrics.report(c.space, c.heldLocked(), len(c.members))
}

var invalidName = regexp.MustCompile(`[^a-z0-9.-]+`)

// leaseName makes an identity (host_random) a valid object name.
func leaseName(identity string) string {
	s := strings.Trim(invalidName.ReplaceAllString(strings.ToLower(identity), "-"), "-.")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func leaseDuration(l *coordinationv1.Lease, def time.Duration) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
		return def
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

func ptr[T any](v T) *T { return &v }

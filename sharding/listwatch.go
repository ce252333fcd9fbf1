package sharding

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Mode says how a replica's informers get their ranges.
type Mode string

const (
	// ServerSide asks the API server for the held ranges (ListOptions.shardSelector, feature gate
	// ShardedListAndWatch) and filters what comes back with the same hash, so that a server without the
	// gate still gives each replica its own clusters only.
	ServerSide Mode = "server"
	// ClientSide lists and watches everything and filters by hash.
	ClientSide Mode = "client"
)

// ListWatch makes lw list and watch the ranges c holds only: server-side where mode asks for it, and
// always filtered by the same hash. example is an object of the listed type (the informer's). When the
// held ranges change, a running watch lists the new ranges itself and passes the difference on: a Deleted
// event for each object of a range given up, an Added (or Modified) one for each object of a range taken,
// then a bookmark at the list's resource version, and watches on from there. So the informer's store
// follows the ranges without its reflector listing again: a reflector that lists again waits its backoff
// first, which grows with each list within two minutes (up to a minute), so a replica whose ranges
// changed a few times in a row, as when replicas join or leave, would not see its new clusters for that
// long. When that list fails, the watch ends with "resource version expired", and the informer lists the
// new ranges as before. Wrap the ListerWatcher of the VitalsClusters' informer with it (see NewInformer).
func ListWatch(lw toolscache.ListerWatcher, example runtime.Object, c *Coordinator, mode Mode, m *Metrics) toolscache.ListerWatcher {
	if m == nil {
		m = NewMetrics(nil)
	}
	return &listWatch{lw: toolscache.ToListerWatcherWithContext(lw), example: example, c: c, mode: mode, m: m}
}

type listWatch struct {
	lw      toolscache.ListerWatcherWithContext
	example runtime.Object
	c       *Coordinator
	mode    Mode
	m       *Metrics

	// listed is the view of the last list, or of the last relist of a watch: the watch that follows it
	// continues that list, so it watches the same ranges and relists at once when they changed in between.
	mu     sync.Mutex
	listed *view
}

var (
	_ toolscache.ListerWatcherWithContext = (*listWatch)(nil)
	_ toolscache.ListerWatcher            = (*listWatch)(nil)
)

// IsWatchListSemanticsUnSupported: the informer lists, then watches (a list tells whether the server
// applied the selector: shardInfo).
func (l *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// nearlyNothing is the selector of a replica that holds no range: no selector matches nothing, this one
// matches the objects whose UID hashes to 0 only (and the filter drops those).
const nearlyNothing = "shardRange(" + Field + ", '0x0000000000000000', '0x0000000000000001')"

// view is the held ranges at one moment: a selector, the hash filter, the channel closed when they
// change, and what the informer's store holds of them (known).
type view struct {
	selector string
	match    func(runtime.Object) bool
	changed  <-chan struct{}
	known    *known
}

// known is what the store was given of a view: the objects of the list, and those the watch passed on
// since, by UID.
type known struct {
	mu   sync.Mutex
	objs map[types.UID]runtime.Object
}

func (k *known) set(e watch.Event) {
	a, err := meta.Accessor(e.Object)
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch e.Type {
	case watch.Added, watch.Modified:
		k.objs[a.GetUID()] = e.Object
	case watch.Deleted:
		delete(k.objs, a.GetUID())
	}
}

func (l *listWatch) view() view {
	held, changed := l.c.Held()
	sel := l.c.space.Selector(held)
	if len(held) == 0 {
		sel = nearlyNothing
	}
	set := make(map[int]bool, len(held))
	for _, i := range held {
		set[i] = true
	}
	match := func(o runtime.Object) bool {
		a, err := meta.Accessor(o)
		return err == nil && set[l.c.space.Of(a.GetUID())]
	}
	return view{selector: sel, match: match, changed: changed, known: &known{objs: map[types.UID]runtime.Object{}}}
}

func (l *listWatch) options(v view, o metav1.ListOptions) metav1.ListOptions {
	if l.mode == ServerSide && v.selector != "" {
		o.ShardSelector = v.selector
	}
	return o
}

func (l *listWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *listWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

// ListWithContext lists the held ranges.
func (l *listWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	v := l.view()
	obj, _, err := l.list(ctx, v, o)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.listed = &v
	l.mu.Unlock()
	return obj, nil
}

// list lists v's ranges, keeps the objects v matches, and records them as v's known objects.
func (l *listWatch) list(ctx context.Context, v view, o metav1.ListOptions) (runtime.Object, []runtime.Object, error) {
	obj, err := l.lw.ListWithContext(ctx, l.options(v, o))
	if err != nil {
		return nil, nil, err
	}
	items, err := meta.ExtractListWithAlloc(obj)
	if err != nil {
		return nil, nil, err
	}
	kept := items[:0]
	for _, it := range items {
		if v.match(it) {
			kept = append(kept, it)
			if a, err := meta.Accessor(it); err == nil {
				v.known.objs[a.GetUID()] = it
			}
		}
	}
	l.m.drop("list", len(items)-len(kept))
	if err := meta.SetList(obj, kept); err != nil {
		return nil, nil, err
	}
	return obj, kept, nil
}

// WatchWithContext watches the ranges of the last list, relisting within the watch when they change (see
// ListWatch). Ranges that changed between the list and the watch are relisted at once (a watch of the new
// view from the list's resource version would never deliver the objects the list left out).
func (l *listWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	listed := l.listed
	l.mu.Unlock()
	v := l.view()
	if listed != nil {
		v = *listed
	}
	w, err := l.lw.WatchWithContext(ctx, l.options(v, o))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	fw := &filterWatch{l: l, out: make(chan watch.Event), stop: make(chan struct{}), cancel: cancel}
	go fw.run(ctx, w, v, o)
	return fw, nil
}

// filterWatch passes the events of the held ranges (and bookmarks), and relists when they change.
type filterWatch struct {
	l        *listWatch
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	cancel   context.CancelFunc
}

func (f *filterWatch) Stop() {
	f.stopOnce.Do(func() { close(f.stop); f.cancel() })
}

func (f *filterWatch) ResultChan() <-chan watch.Event { return f.out }

func (f *filterWatch) send(e watch.Event) bool {
	select {
	case f.out <- e:
		return true
	case <-f.stop:
		return false
	}
}

func (f *filterWatch) run(ctx context.Context, in watch.Interface, v view, o metav1.ListOptions) {
	defer close(f.out)
	defer func() { in.Stop() }()
	for {
		select {
		case <-f.stop:
			return
		case <-v.changed:
			in.Stop()
			next, ok := f.relist(ctx, v, o)
			if !ok {
				f.send(watch.Event{Type: watch.Error, Object: &metav1.Status{
					Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
					Message: "the shard ranges of this replica changed: list again",
				}})
				return
			}
			v, in = next.v, next.in
		case e, ok := <-in.ResultChan():
			if !ok {
				return
			}
			if e.Type != watch.Bookmark && e.Type != watch.Error && !v.match(e.Object) {
				f.l.m.drop("watch", 1)
				continue
			}
			v.known.set(e)
			if !f.send(e) {
				return
			}
		}
	}
}

type relisted struct {
	v  view
	in watch.Interface
}

// relist lists the new view, passes on the difference from what the store holds of the old one (Deleted
// for what left, Added or Modified for what came or changed), a bookmark at the list's resource version,
// and watches the new view from there. false: it could not (the list or the watch failed, or the watch
// was stopped), and the informer must list again.
func (f *filterWatch) relist(ctx context.Context, old view, o metav1.ListOptions) (relisted, bool) {
	l := f.l
	v := l.view()
	obj, kept, err := l.list(ctx, v, metav1.ListOptions{})
	if err != nil {
		return relisted{}, false
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil || lm.GetResourceVersion() == "" {
		return relisted{}, false
	}
	rv := lm.GetResourceVersion()
	wo := o
	wo.ResourceVersion, wo.ResourceVersionMatch = rv, ""
	in, err := l.lw.WatchWithContext(ctx, l.options(v, wo))
	if err != nil {
		return relisted{}, false
	}
	old.known.mu.Lock()
	before := make(map[types.UID]runtime.Object, len(old.known.objs))
	for uid, o := range old.known.objs {
		before[uid] = o
	}
	old.known.mu.Unlock()
	var events []watch.Event
	for _, it := range kept {
		a, err := meta.Accessor(it)
		if err != nil {
			continue
		}
		prev, had := before[a.GetUID()]
		switch {
		case !had:
			events = append(events, watch.Event{Type: watch.Added, Object: it})
		case resourceVersion(prev) != a.GetResourceVersion():
			events = append(events, watch.Event{Type: watch.Modified, Object: it})
		}
	}
	for uid, prev := range before {
		if _, still := v.known.objs[uid]; !still {
			events = append(events, watch.Event{Type: watch.Deleted, Object: prev})
		}
	}
	bookmark := l.example.DeepCopyObject()
	if a, err := meta.Accessor(bookmark); err == nil {
		a.SetResourceVersion(rv)
	}
	events = append(events, watch.Event{Type: watch.Bookmark, Object: bookmark})
	for _, e := range events {
		if !f.send(e) {
			in.Stop()
			return relisted{}, false
		}
	}
	l.mu.Lock()
	l.listed = &v
	l.mu.Unlock()
	l.m.relist()
	return relisted{v: v, in: in}, true
}

func resourceVersion(o runtime.Object) string {
	if a, err := meta.Accessor(o); err == nil {
		return a.GetResourceVersion()
	}
	return ""
}

// NewInformer returns a constructor of shared informers (controller-runtime's cache.Options.NewInformer)
// that shards the informers of the objects isSharded picks and leaves the others alone.
func NewInformer(c *Coordinator, mode Mode, m *Metrics, isSharded func(runtime.Object) bool) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		if isSharded(obj) {
			lw = ListWatch(lw, obj, c, mode, m)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
	}
}

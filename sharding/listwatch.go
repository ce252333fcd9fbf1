package sharding

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// always filtered by the same hash. When the held ranges change, the watch ends with "resource version
// expired", so that the informer lists again with the new ranges: objects of ranges given up are deleted
// from its store, objects of ranges taken are added. Wrap the ListerWatcher of the VitalsClusters'
// informer with it (see NewInformer).
func ListWatch(lw toolscache.ListerWatcher, c *Coordinator, mode Mode, m *Metrics) toolscache.ListerWatcher {
	if m == nil {
		m = NewMetrics(nil)
	}
	return &listWatch{lw: toolscache.ToListerWatcherWithContext(lw), c: c, mode: mode, m: m}
}

type listWatch struct {
	lw   toolscache.ListerWatcherWithContext
	c    *Coordinator
	mode Mode
	m    *Metrics

	// listed is the view of the last list: the watch that follows it continues that list, so it
	// watches the same ranges and ends at once when they changed in between.
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

// view is the held ranges at one moment: a selector, the hash filter, and the channel closed when they
// change.
type view struct {
	selector string
	match    func(runtime.Object) bool
	changed  <-chan struct{}
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
	return view{selector: sel, match: match, changed: changed}
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
	l.mu.Lock()
	l.listed = &v
	l.mu.Unlock()
	opts := l.options(v, o)
	obj, err := l.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractListWithAlloc(obj)
	if err != nil {
		return nil, err
	}
	kept := items[:0]
	for _, it := range items {
		if v.match(it) {
			kept = append(kept, it)
		}
	}
	l.m.drop("list", len(items)-len(kept))
	if err := meta.SetList(obj, kept); err != nil {
		return nil, err
	}
	return obj, nil
}

// WatchWithContext watches the ranges of the last list until they change. Ranges that changed between
// the list and the watch end the watch at once, so that the informer lists the new ranges (a fresh view
// here would watch ranges whose objects the list never gave the store).
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
	fw := &filterWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{}), m: l.m}
	go fw.run(v)
	return fw, nil
}

// filterWatch passes the events of the held ranges (and bookmarks), and ends with an "expired" error
// when the held ranges change.
type filterWatch struct {
	in       watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	m        *Metrics
}

func (f *filterWatch) Stop() {
	f.stopOnce.Do(func() { close(f.stop) })
}

func (f *filterWatch) ResultChan() <-chan watch.Event { return f.out }

func (f *filterWatch) run(v view) {
	defer close(f.out)
	defer f.in.Stop()
	send := func(e watch.Event) bool {
		select {
		case f.out <- e:
			return true
		case <-f.stop:
			return false
		}
	}
	for {
		select {
		case <-f.stop:
			return
		case <-v.changed:
			send(watch.Event{Type: watch.Error, Object: &metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
				Message: "the shard ranges of this replica changed: list again",
			}})
			return
		case e, ok := <-f.in.ResultChan():
			if !ok {
				return
			}
			if e.Type != watch.Bookmark && e.Type != watch.Error && !v.match(e.Object) {
				f.m.drop("watch", 1)
				continue
			}
			if !send(e) {
				return
			}
		}
	}
}

// NewInformer returns a constructor of shared informers (controller-runtime's cache.Options.NewInformer)
// that shards the informers of the objects isSharded picks and leaves the others alone.
func NewInformer(c *Coordinator, mode Mode, m *Metrics, isSharded func(runtime.Object) bool) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		if isSharded(obj) {
			lw = ListWatch(lw, c, mode, m)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
	}
}

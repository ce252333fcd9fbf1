package sharding

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestWatchFollowsTheRanges: a watch follows the list before it. When the held ranges change (between the
// list and the watch, or during the watch), the watch lists the new ranges itself and passes the difference
// on, then a bookmark at the list's resource version: the informer's store follows the ranges without its
// reflector listing again (which waits a backoff growing with each list). A watch of the new ranges alone
// would never deliver the objects the list left out (the bench found replicas that took their ranges after
// their first list and then did nothing). When that list fails, the watch ends with "expired", so that the
// informer lists again.
func TestWatchFollowsTheRanges(t *testing.T) {
	space, err := NewSpace(2)
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for i := 0; len(objs) < 4; i++ {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "5"}})
	}
	both, none := []int{0, 1}, []int{}
	for _, tc := range []struct {
		name string
		// held at the list, then held after the change (nil: no change)
		before, after []int
		listFails     bool
		// want: the events the watch passes on, by type; expired: it ends with "expired" instead
		want    map[watch.EventType]int
		expired bool
	}{
		{name: "ranges unchanged: the watch goes on", before: none, after: nil, want: map[watch.EventType]int{}},
		{name: "ranges taken: their objects added, then a bookmark", before: none, after: both, want: map[watch.EventType]int{watch.Added: 4, watch.Bookmark: 1}},
		{name: "ranges given up: their objects deleted, then a bookmark", before: both, after: none, want: map[watch.EventType]int{watch.Deleted: 4, watch.Bookmark: 1}},
		{name: "the list of the new ranges fails: the informer lists again", before: none, after: both, listFails: true, expired: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Coordinator{space: space, until: map[int]time.Time{}, changed: make(chan struct{})}
			hold := func(ranges []int) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.until = map[int]time.Time{}
				for _, i := range ranges {
					c.until[i] = time.Now().Add(time.Hour)
				}
				c.changedLocked()
			}
			hold(tc.before)
			lists := 0
			var watches []metav1.ListOptions
			lw := &toolscache.ListWatch{
				ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
					lists++
					if tc.listFails && lists > 1 {
						return nil, fmt.Errorf("the API server is down")
					}
					l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
					for _, o := range objs {
						l.Items = append(l.Items, *o.(*corev1.ConfigMap))
					}
					return l, nil
				},
				WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
					watches = append(watches, o)
					return watch.NewFake(), nil
				},
			}
			sl := ListWatch(lw, &corev1.ConfigMap{}, c, ClientSide, nil).(toolscache.ListerWatcherWithContext)
			got, err := sl.ListWithContext(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n, want := len(got.(*corev1.ConfigMapList).Items), 2*len(tc.before); n != want {
				t.Fatalf("a replica holding ranges %v listed %d objects, want %d", tc.before, n, want)
			}
			if tc.after != nil {
				hold(tc.after)
			}
			w, err := sl.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			seen := map[watch.EventType]int{}
			expired := false
			for done := false; !done; {
				select {
				case e, ok := <-w.ResultChan():
					if !ok {
						done = true
						break
					}
					if st, isStatus := e.Object.(*metav1.Status); e.Type == watch.Error && isStatus && st.Code == http.StatusGone {
						expired = true
						continue
					}
					seen[e.Type]++
					if e.Type == watch.Bookmark {
						if rv := e.Object.(*corev1.ConfigMap).ResourceVersion; rv != "10" {
							t.Errorf("bookmark at %q, want the relist's 10", rv)
						}
						done = true
					}
				case <-time.After(200 * time.Millisecond):
					// No timing is asserted: without an event the watch simply goes on.
					done = true
				}
			}
			if expired != tc.expired {
				t.Fatalf("expired %v, want %v (events %v)", expired, tc.expired, seen)
			}
			if !tc.expired && fmt.Sprint(seen) != fmt.Sprint(tc.want) {
				t.Errorf("events %v, want %v", seen, tc.want)
			}
			if !tc.expired && tc.after != nil && (len(watches) != 2 || watches[1].ResourceVersion != "10") {
				t.Errorf("watches %+v: want the new ranges watched from the relist's resource version", watches)
			}
		})
	}
}

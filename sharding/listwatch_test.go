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

// TestWatchContinuesItsList: a watch follows the list before it. When the held ranges change between the
// two, the watch ends at once with "expired", so that the informer lists the new ranges; a watch of the
// new ranges alone would never deliver the objects the list left out (the bench found replicas that took
// their ranges after their first list and then did nothing).
func TestWatchContinuesItsList(t *testing.T) {
	space, err := NewSpace(2)
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for i := 0; len(objs) < 4; i++ {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), UID: types.UID(fmt.Sprintf("uid-%d", i))}})
	}
	for _, tc := range []struct {
		name string
		// change: the held ranges change between the list and the watch.
		change      bool
		wantExpired bool
	}{
		{name: "ranges unchanged: the watch goes on", change: false, wantExpired: false},
		{name: "ranges taken after the list: the watch ends, the informer lists again", change: true, wantExpired: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Coordinator{space: space, until: map[int]time.Time{}, changed: make(chan struct{})}
			fake := watch.NewFake()
			lw := &toolscache.ListWatch{
				ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
					l := &corev1.ConfigMapList{}
					for _, o := range objs {
						l.Items = append(l.Items, *o.(*corev1.ConfigMap))
					}
					return l, nil
				},
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fake, nil },
			}
			sl := ListWatch(lw, c, ClientSide, nil).(toolscache.ListerWatcherWithContext)
			got, err := sl.ListWithContext(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(got.(*corev1.ConfigMapList).Items); n != 0 {
				t.Fatalf("a replica holding nothing listed %d objects", n)
			}
			if tc.change {
				c.mu.Lock()
				c.until[0], c.until[1] = time.Now().Add(time.Hour), time.Now().Add(time.Hour)
				c.changedLocked()
				c.mu.Unlock()
			}
			w, err := sl.WatchWithContext(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			select {
			case e := <-w.ResultChan():
				st, ok := e.Object.(*metav1.Status)
				expired := e.Type == watch.Error && ok && st.Code == http.StatusGone
				if expired != tc.wantExpired {
					t.Fatalf("first event %s %+v, want expired %v", e.Type, e.Object, tc.wantExpired)
				}
			case <-time.After(200 * time.Millisecond):
				// No timing is asserted: without an event the watch simply goes on.
				if tc.wantExpired {
					t.Fatal("the watch went on over ranges its list never gave the store")
				}
			}
		})
	}
}

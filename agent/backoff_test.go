package agent

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// requestCounter counts the requests a client sends, by method and resource path.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		key := r.Method + " " + r.URL.Path
		if r.URL.Query().Get("watch") == "true" {
			key = "WATCH " + r.URL.Path
		}
		c.mu.Lock()
		c.n[key]++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (c *requestCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// noPods is a pod index that knows no pod.
type noPods struct{}

func (noPods) Pod(string, string) (*corev1.Pod, bool) { return nil, false }
func (noPods) HasSynced() bool                        { return true }

// TestRetriesBackOffDuringAPIOutage stops a private kube-apiserver and lets two minutes pass on the
// agents' clock: the node conditions writer and the Events source, which retried every second, now
// retry after a jittered exponential backoff (1s doubling, up to 1.5 times that at random). When the
// API comes back, they recover.
func TestRetriesBackOffDuringAPIOutage(t *testing.T) {
	pk := testenv.PrivateKube(t)
	admin, err := kubernetes.NewForConfig(pk.Config())
	if err != nil {
		t.Fatal(err)
	}
	node := uniqueName("agent-outage")
	if _, err := admin.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	counter := &requestCounter{n: map[string]int{}}
	cfg := pk.Config()
	cfg.Wrap(counter.wrap)
	k, err := NewKube(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := pk.Stop(); err != nil {
		t.Fatal(err)
	}

	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	res := &staticResults{}
	res.set(okResult(CheckNetlink), okResult(CheckCNIConfig), okResult(BudgetCNIAdd), okResult(BudgetSandboxNetwork))
	nc := &NodeConditions{Client: k, NodeName: node, Specs: DefaultConditionSpecs(), Results: res.get, Clock: clk,
		Period: time.Second, StartGrace: time.Nanosecond}
	synced := make(chan struct{}, 1)
	src := &EventSource{Client: k, NodeName: node, Pods: noPods{}, Reporter: &collected{}, Clock: clk,
		BeatPeriod: time.Second, Synced: func() { synced <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { _ = nc.Run(ctx) })
	wg.Go(func() { _ = src.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	getNode := "GET /api/v1/nodes/" + node
	listEvents := "GET /api/v1/events"
	waitFor(t, "first attempts", func() bool { return counter.get(getNode) >= 1 && counter.get(listEvents) >= 1 })
	// Two minutes of outage, one second at a time. Retrying every second would be 120 requests each.
	for range 120 {
		clk.Step(time.Second)
		time.Sleep(10 * time.Millisecond)
	}
	// Let the last due attempts finish.
	time.Sleep(200 * time.Millisecond)
	for _, key := range []string{getNode, listEvents} {
		// Attempts at about 0, 1, 3, 7, 15, 31, 63 s and later: at most 8 within two minutes.
		if n := counter.get(key); n < 3 || n > 8 {
			t.Errorf("%s: %d requests during a two-minute outage, want 3 to 8 (a jittered exponential backoff)", key, n)
		}
	}

	if err := pk.Start(); err != nil {
		t.Fatal(err)
	}
	// Back: the next attempts (at most the backoff's cap away) succeed.
	deadline := time.Now().Add(60 * time.Second)
	for len(nc.Written()) == 0 || len(synced) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the API came back: conditions %v, events listed %v", nc.Written(), len(synced) > 0)
		}
		clk.Step(time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	n, err := admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range n.Status.Conditions {
		found = found || c.Type == ConditionPodNetworkHealthy
	}
	if !found {
		t.Errorf("conditions not written after recovery: %+v", n.Status.Conditions)
	}
}

// TestBackoffWatcherSpacesFailedWatches: the RetryWatcher that follows Events asks for a new watch
// every second after a failure; the watcher it calls waits out the backoff first.
func TestBackoffWatcherSpacesFailedWatches(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	var calls int
	fail := true
	w := &backoffWatcher{clock: clk, r: newRetrier(DefaultAPIBackoff(), nil), watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		calls++
		if fail {
			return nil, errors.New("connection refused")
		}
		return watch.NewEmptyWatch(), nil
	}}
	ctx := context.Background()
	if _, err := w.WatchWithContext(ctx, metav1.ListOptions{}); err == nil || calls != 1 {
		t.Fatalf("first watch: %v after %d calls", err, calls)
	}
	// The next call waits on the clock: it has not reached the server after a second.
	done := make(chan error, 1)
	go func() { _, err := w.WatchWithContext(ctx, metav1.ListOptions{}); done <- err }()
	waitFor(t, "the second watch to wait", clk.HasWaiters)
	if calls != 1 {
		t.Fatalf("second watch sent without waiting (%d calls)", calls)
	}
	clk.Step(2 * time.Second) // the first step is 1s, at most 1.5s with jitter
	if err := <-done; err == nil || calls != 2 {
		t.Fatalf("second watch: %v after %d calls", err, calls)
	}
	// A success resets the backoff: the watch after it does not wait.
	fail = false
	go func() { _, err := w.WatchWithContext(ctx, metav1.ListOptions{}); done <- err }()
	waitFor(t, "the third watch to wait", clk.HasWaiters)
	clk.Step(4 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := w.WatchWithContext(ctx, metav1.ListOptions{}); err != nil || calls != 4 {
		t.Fatalf("watch after a success: %v after %d calls", err, calls)
	}
}

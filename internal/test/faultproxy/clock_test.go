package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// Delays and holds run on the injected clock: a fake clock makes an hour-long delay instant and exact.
func TestDelayAndHoldUseTheInjectedClock(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer upstream.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clocktesting.NewFakeClock(start)
	p, err := New(upstream.URL, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Add(
		Rule{Name: "slow", Path: "/slow", Fault: Delay(time.Hour)},
		Rule{Name: "hold", Path: "/hold", Fault: Timeout(time.Minute)},
	); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	type result struct {
		body string
		err  error
	}
	get := func(path string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			resp, err := c.Get(p.URL() + path)
			if err != nil {
				ch <- result{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ch <- result{body: string(b), err: err}
		}()
		return ch
	}
	waitWaiter := func() {
		deadline := time.Now().Add(30 * time.Second)
		for !fc.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the proxy never waited on the clock")
			}
			time.Sleep(time.Millisecond)
		}
	}

	ch := get("/slow")
	waitWaiter()
	select {
	case r := <-ch:
		t.Fatalf("answered before the clock moved: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	fc.Step(time.Hour)
	if r := <-ch; r.err != nil || r.body != "ok" {
		t.Fatalf("after the delay: %+v", r)
	}

	ch = get("/hold")
	waitWaiter()
	fc.Step(time.Minute)
	if r := <-ch; r.err == nil {
		t.Fatalf("a held request must end without an answer, got %q", r.body)
	}

	ev := p.Events()
	if len(ev) != 2 || !ev[0].Time.Equal(start) || ev[1].Kind != KindTimeout || !ev[1].Time.Equal(start.Add(time.Hour)) {
		t.Fatalf("events %+v", ev)
	}
}

// A request held after the upstream acted: the upstream saw it once, the client never hears an answer.
func TestTimeoutAfterUpstream(t *testing.T) {
	seen := make(chan string, 4)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Method + " " + r.URL.Path
		w.WriteHeader(http.StatusAccepted)
	}))
	defer upstream.Close()
	p, err := New(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Add(Rule{Name: "held", Method: "DELETE", Path: "/volumes/*", Fault: TimeoutAfterUpstream(0)}); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodDelete, p.URL()+"/volumes/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a held request got an answer: %s", resp.Status)
	}
	select {
	case got := <-seen:
		if got != "DELETE /volumes/v1" {
			t.Fatalf("upstream saw %q", got)
		}
	default:
		t.Fatal("the upstream never saw the request")
	}
	if n := p.Count("held"); n != 1 {
		t.Fatalf("count %d, want 1", n)
	}
}

package contenders

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// start builds a contender and waits until its checks pass.
func start(tb testing.TB, name string) *Contender {
	tb.Helper()
	c, err := New(name, Spec{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	deadline := time.Now().Add(30 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: checks not passing", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

// TestContendersAnswer checks that every contender answers 200 on each path with a sane body.
func TestContendersAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts background checks")
	}
	for _, name := range Names() {
		c := start(t, name)
		for key, path := range c.Paths {
			rec := httptest.NewRecorder()
			c.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusOK {
				t.Errorf("%s %s: %d %s", name, path, rec.Code, rec.Body)
			}
			if key == "verbose" && name != "floor" && !strings.Contains(rec.Body.String(), "check-09") {
				t.Errorf("%s %s: no per-check listing: %s", name, path, rec.Body)
			}
		}
	}
}

// BenchmarkHandler measures one request through each handler in-process (httptest recorder):
// allocations per request are the figure of interest (time includes the synchronous checks of the
// contenders that run them on every probe).
func BenchmarkHandler(b *testing.B) {
	for _, name := range Names() {
		c := start(b, name)
		for _, key := range SortedPathKeys(c) {
			path := c.Paths[key]
			b.Run(name+"/"+key, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					c.Handler.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%d", rec.Code)
					}
				}
			})
		}
	}
}

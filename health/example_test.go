package health_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/vitalsproject/vitals/health"
)

func Example() {
	m := health.NewManager()
	m.MustRegister(health.Check{
		Name:     "keystone",
		Probes:   health.Readiness,
		Interval: 10 * time.Second,
		Timeout:  2 * time.Second,
		Run:      func(ctx context.Context) error { return nil }, // e.g. issue a token
	})
	loop, _ := m.Component("reconciler", health.ComponentOptions{Deadline: time.Minute})
	cni, _ := m.Budget("cni-add", health.BudgetOptions{Mode: health.Consecutive, Limit: 5})
	m.Start(context.Background())
	defer m.Stop()

	loop.Beat()                      // on every pass of the loop
	cni.Failure(errors.New("no IP")) // on every failed CNI ADD
	for r, _ := m.Result("keystone"); r.Status == health.StatusUnknown; r, _ = m.Result("keystone") {
		time.Sleep(10 * time.Millisecond) // the first run happens within 100ms
	}

	h := m.Handler(health.HandlerOptions{})
	for _, path := range []string{"/readyz?verbose", "/livez?verbose"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		fmt.Print(w.Code, "\n", w.Body.String())
	}
	// Output:
	// 200
	// [+]keystone ok
	// readyz check passed
	// 200
	// [+]reconciler ok
	// [+]cni-add ok
	// livez check passed
}

// Package contenders builds the HTTP health handlers compared by bench/health: Vitals' health
// manager, the Kubernetes apiserver's healthz, controller-runtime's healthz, alexliesenfeld/health
// with synchronous and with periodic checks, and a floor (a bare handler writing "ok"). Each serves
// the same checks (N checks whose body takes D, by default 10 of 2 ms) on /readyz, with
// /readyz?verbose for the per-check listing.
package contenders

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"time"

	alex "github.com/alexliesenfeld/health"
	apihealthz "k8s.io/apiserver/pkg/server/healthz"
	crhealthz "sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/vitalsproject/vitals/health"
)

// Spec is the workload every contender serves.
type Spec struct {
	// Checks is the number of checks (default 10).
	Checks int
	// Cost is how long one check body takes (default 2ms): it sleeps, as a check waiting on a
	// remote service does.
	Cost time.Duration
	// Interval of the background checks of the contenders that have them (default 1s).
	Interval time.Duration
}

func (s Spec) withDefaults() Spec {
	if s.Checks == 0 {
		s.Checks = 10
	}
	if s.Cost == 0 {
		s.Cost = 2 * time.Millisecond
	}
	if s.Interval == 0 {
		s.Interval = time.Second
	}
	return s
}

func (s Spec) name(i int) string { return fmt.Sprintf("check-%02d", i) }

// body is a check that takes Cost and passes (honouring cancellation).
func (s Spec) body(ctx context.Context) error {
	t := time.NewTimer(s.Cost)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Contender is one handler under test.
type Contender struct {
	Name    string
	Handler http.Handler
	// Paths: "readyz" and "verbose" always; "json" when the contender has a distinct JSON form.
	Paths map[string]string
	// Ready reports whether every check has a first result (background contenders).
	Ready func() bool
	// Stop releases background work.
	Stop func()
}

// Names lists the contenders, floor first.
func Names() []string {
	return []string{"floor", "vitals", "apiserver", "controller-runtime", "alexliesenfeld", "alexliesenfeld-periodic"}
}

// New builds the named contender.
func New(name string, spec Spec) (*Contender, error) {
	spec = spec.withDefaults()
	always := func() bool { return true }
	nop := func() {}
	std := map[string]string{"readyz": "/readyz", "verbose": "/readyz?verbose"}
	switch name {
	case "floor":
		return &Contender{Name: name, Handler: Floor(), Paths: std, Ready: always, Stop: nop}, nil
	case "vitals":
		m, h := Vitals(spec)
		ready := func() bool {
			for _, r := range m.Results() {
				if r.Status != health.StatusOK {
					return false
				}
			}
			return true
		}
		return &Contender{Name: name, Handler: h, Ready: ready, Stop: m.Stop, Paths: map[string]string{
			"readyz": "/readyz", "verbose": "/readyz?verbose", "json": "/readyz?format=json"}}, nil
	case "apiserver":
		return &Contender{Name: name, Handler: APIServer(spec), Paths: std, Ready: always, Stop: nop}, nil
	case "controller-runtime":
		return &Contender{Name: name, Handler: ControllerRuntime(spec), Paths: std, Ready: always, Stop: nop}, nil
	case "alexliesenfeld", "alexliesenfeld-periodic":
		h, ready, stop := Alex(spec, name == "alexliesenfeld-periodic")
		return &Contender{Name: name, Handler: h, Paths: std, Ready: ready, Stop: stop}, nil
	}
	return nil, fmt.Errorf("unknown contender %q (expected one of %v)", name, Names())
}

// Floor is what no health library can beat: a constant "ok".
func Floor() http.Handler {
	body := []byte("ok")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(body)
	})
}

// Vitals is the health manager with the checks registered as readiness checks run in the
// background at spec.Interval; it is started, and serves at "/" (all probe paths).
func Vitals(spec Spec) (*health.Manager, http.Handler) {
	spec = spec.withDefaults()
	var w io.Writer = io.Discard
	if os.Getenv("HEALTHBENCH_LOG") != "" {
		w = os.Stderr // transitions and panics, to explain a failed probe during a run
	}
	m := health.NewManager(health.WithLogger(slog.New(slog.NewTextHandler(w, nil))))
	for i := 0; i < spec.Checks; i++ {
		m.MustRegister(health.Check{Name: spec.name(i), Probes: health.Readiness | health.Liveness,
			Interval: spec.Interval, Timeout: spec.Interval / 2, Run: spec.body})
	}
	m.Start(context.Background())
	return m, m.Handler(health.HandlerOptions{})
}

// APIServer is k8s.io/apiserver's healthz on /readyz: every probe runs every check, in order.
func APIServer(spec Spec) http.Handler {
	spec = spec.withDefaults()
	mux := http.NewServeMux()
	var cs []apihealthz.HealthChecker
	for i := 0; i < spec.Checks; i++ {
		cs = append(cs, apihealthz.NamedCheck(spec.name(i), func(r *http.Request) error { return spec.body(r.Context()) }))
	}
	apihealthz.InstallPathHandler(mux, "/readyz", cs...)
	return mux
}

// ControllerRuntime is controller-runtime's healthz.Handler on /readyz, mounted as its manager does.
func ControllerRuntime(spec Spec) http.Handler {
	spec = spec.withDefaults()
	h := &crhealthz.Handler{Checks: map[string]crhealthz.Checker{}}
	for i := 0; i < spec.Checks; i++ {
		h.Checks[spec.name(i)] = func(r *http.Request) error { return spec.body(r.Context()) }
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", http.StripPrefix("/readyz", h))
	mux.Handle("/readyz/", http.StripPrefix("/readyz", h))
	return mux
}

// Alex is alexliesenfeld/health: /readyz answers with details disabled ({"status":"up"}),
// /readyz?verbose with every check's state. Without periodic checks, its checker runs the checks
// on a probe and caches the result for its default TTL (1s); with them, they run in the
// background at spec.Interval.
func Alex(spec Spec, periodic bool) (http.Handler, func() bool, func()) {
	spec = spec.withDefaults()
	mk := func(details bool) alex.Checker {
		opts := []alex.CheckerOption{}
		if !details {
			opts = append(opts, alex.WithDisabledDetails())
		}
		for i := 0; i < spec.Checks; i++ {
			c := alex.Check{Name: spec.name(i), Check: spec.body}
			if periodic {
				opts = append(opts, alex.WithPeriodicCheck(spec.Interval, 0, c))
			} else {
				opts = append(opts, alex.WithCheck(c))
			}
		}
		return alex.NewChecker(opts...)
	}
	quiet, verbose := mk(false), mk(true)
	hq, hv := alex.NewHandler(quiet), alex.NewHandler(verbose)
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("verbose") {
			hv(w, r)
			return
		}
		hq(w, r)
	})
	ready := func() bool {
		res := verbose.Check(context.Background())
		return res.Status == alex.StatusUp
	}
	stop := func() { quiet.Stop(); verbose.Stop() }
	return mux, ready, stop
}

// SortedPathKeys lists a contender's path keys in a stable order.
func SortedPathKeys(c *Contender) []string {
	keys := make([]string, 0, len(c.Paths))
	for k := range c.Paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

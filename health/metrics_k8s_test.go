package health

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apiserver/pkg/server/healthz"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/prometheus/slis"
)

// TestKubernetesMetricsMatchApiserver probes Vitals' handler and the apiserver's own healthz
// handlers (k8s.io/apiserver, which records through k8s.io/component-base's slis metrics) with the
// same checks and the same sequence of requests, and compares the two registries' output of
// kubernetes_healthcheck and kubernetes_healthchecks_total.
func TestKubernetesMetricsMatchApiserver(t *testing.T) {
	kreg := k8smetrics.NewKubeRegistry()
	slis.Register(kreg)
	slis.ResetHealthMetrics()
	t.Cleanup(slis.ResetHealthMetrics)

	reg := prometheus.NewRegistry()
	m, clk := newTest(t, WithRegisterer(reg), WithKubernetesMetricNames())
	results := map[string]error{}
	var hc []healthz.HealthChecker
	order := []string{"etcd", "ping", "informer-sync"}
	for _, name := range order {
		m.MustRegister(Check{Name: name, Run: ok, Probes: AllProbes, Interval: time.Hour})
		hc = append(hc, healthz.NamedCheck(name, func(*http.Request) error { return results[name] }))
	}
	set := func(name string, err error) {
		results[name] = err
		entryOf(t, m, name).record(clk.Now(), 0, err)
	}
	for _, name := range order {
		set(name, nil)
	}
	mux := http.NewServeMux()
	healthz.InstallHandler(mux, hc...)
	healthz.InstallLivezHandler(mux, hc...)
	healthz.InstallReadyzHandler(mux, hc...)
	ours := m.Handler(HandlerOptions{})

	probe := func(method, target string) {
		t.Helper()
		a, _, _ := get(ours, method, target)
		b, _, _ := get(mux, method, target)
		if method == http.MethodHead { // HEAD answers as oslo.middleware: 204/503 for 200/500
			a = map[int]int{204: 200, 503: 500}[a]
		}
		if a != b {
			t.Fatalf("%s %s: vitals %d, apiserver %d", method, target, a, b)
		}
	}
	probe("GET", "/readyz")
	probe("GET", "/livez?verbose")
	probe("GET", "/healthz")
	probe("GET", "/readyz?exclude=etcd")
	probe("GET", "/readyz/etcd") // per-check paths count nothing
	set("informer-sync", errors.New("not synced"))
	probe("GET", "/readyz")
	probe("GET", "/readyz?verbose")
	probe("HEAD", "/livez")
	probe("GET", "/livez?exclude=informer-sync")
	set("informer-sync", nil)
	set("etcd", errBoom)
	probe("GET", "/healthz?verbose")
	probe("GET", "/readyz")

	names := map[string]bool{"kubernetes_healthcheck": true, "kubernetes_healthchecks_total": true}
	want := exposition(t, kreg, names)
	got := exposition(t, reg, names)
	if got != want {
		t.Fatalf("vitals:\n%s\napiserver (component-base registry):\n%s", got, want)
	}
	if len(want) < 200 {
		t.Fatalf("the apiserver recorded almost nothing:\n%s", want)
	}
	t.Logf("both:\n%s", got)
}

// exposition gathers g and renders the named families in the text format.
func exposition(t *testing.T, g prometheus.Gatherer, names map[string]bool) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if !names[mf.GetName()] {
			continue
		}
		if err := enc.Encode((*dto.MetricFamily)(mf)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

package health

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. The kubernetes_* names are the apiserver's (k8s.io/component-base slis), exported
// only with WithKubernetesMetricNames, and they count what the apiserver counts: each request to an
// aggregate probe path observes every check it reports (not the excluded ones), with the path's
// name as type ("livez", "readyz", "healthz", and "alive", "ready", "startupz"); a check's gauge
// holds the verdict of the last such request. Per-check sub-paths, disabled handlers and check runs
// count nothing there.
const (
	metricCheckStatus   = "vitals_health_check_status"
	metricCheckUp       = "vitals_health_check_up"
	metricCheckResults  = "vitals_health_check_results_total"
	metricCheckDuration = "vitals_health_check_duration_seconds"
	metricProbeStatus   = "vitals_health_probe_status"
	metricK8sGauge      = "kubernetes_healthcheck"
	metricK8sTotal      = "kubernetes_healthchecks_total"
)

type metrics struct {
	status   *prometheus.GaugeVec
	up       *prometheus.GaugeVec
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	probe    *prometheus.GaugeVec
	probes   [numProbes]prometheus.Gauge
	k8sGauge *prometheus.GaugeVec
	k8sTotal *prometheus.CounterVec
}

// entryMetrics holds one entry's series, resolved once at registration.
type entryMetrics struct {
	status   [numProbes]prometheus.Gauge
	up       prometheus.Gauge
	success  prometheus.Counter
	failure  prometheus.Counter
	duration prometheus.Observer
	// The apiserver-named series of each probe path, created at the first request that observes
	// them (as the apiserver's appear); nil vectors without WithKubernetesMetricNames.
	name     string
	k8sGauge *prometheus.GaugeVec
	k8sTotal *prometheus.CounterVec
	k8s      [numPaths]k8sSeries
}

// k8sSeries are one entry's apiserver-named series for one probe path.
type k8sSeries struct {
	gauge   atomic.Pointer[prometheus.Gauge]
	success atomic.Pointer[prometheus.Counter]
	failure atomic.Pointer[prometheus.Counter]
}

func newMetrics(reg prometheus.Registerer, k8s bool) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		status: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricCheckStatus,
			Help: "1 when the check, component or budget passes the probe (ok, degraded or excused), 0 when it fails it.",
		}, []string{"name", "kind", "probe"})),
		up: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricCheckUp,
			Help: "1 when the check, component or budget is ok, 0 when it is failed or unknown (whatever its severity).",
		}, []string{"name", "kind", "severity"})),
		results: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricCheckResults,
			Help: "Runs of each check by result (success or failure).",
		}, []string{"name", "result"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricCheckDuration,
			Help:    "Duration of check runs in seconds.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"name"})),
		probe: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricProbeStatus,
			Help: "1 when the probe (liveness, readiness, startup) passes, 0 when it fails.",
		}, []string{"probe"})),
	}
	for i, p := range probeByIdx {
		m.probes[i] = m.probe.WithLabelValues(p.String())
	}
	if k8s {
		m.k8sGauge = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricK8sGauge,
			Help: "[STABLE] This metric records the result of a single healthcheck.",
		}, []string{"name", "type"}))
		m.k8sTotal = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricK8sTotal,
			Help: "[STABLE] This metric records the results of all healthcheck.",
		}, []string{"name", "type", "status"}))
	}
	return m
}

// register registers c, or returns the collector already registered under the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

func (m *metrics) forEntry(name string, kind Kind, probes Probe, severity Severity) *entryMetrics {
	if m == nil {
		return nil
	}
	em := &entryMetrics{up: m.up.WithLabelValues(name, string(kind), severity.String()),
		name: name, k8sGauge: m.k8sGauge, k8sTotal: m.k8sTotal}
	for i, p := range probeByIdx {
		if probes&p == 0 {
			continue
		}
		em.status[i] = m.status.WithLabelValues(name, string(kind), p.String())
	}
	if kind == KindCheck {
		em.success = m.results.WithLabelValues(name, "success")
		em.failure = m.results.WithLabelValues(name, "failure")
		em.duration = m.duration.WithLabelValues(name)
	}
	return em
}

func (em *entryMetrics) setStatus(r Result, fails [numProbes]bool) {
	if em == nil {
		return
	}
	em.up.Set(boolFloat(r.Status == StatusOK))
	for i := range numProbes {
		if em.status[i] != nil {
			em.status[i].Set(boolFloat(!fails[i]))
		}
	}
}

// observeProbe records that a request to probe path path reported this entry, failed or not, as
// the apiserver's healthz handler does for each check it runs.
func (em *entryMetrics) observeProbe(path int, failed bool) {
	if em == nil || em.k8sGauge == nil {
		return
	}
	s := &em.k8s[path]
	typ := pathNames[path]
	g := lazy(&s.gauge, func() prometheus.Gauge { return em.k8sGauge.WithLabelValues(em.name, typ) })
	if failed {
		g.Set(0)
		lazy(&s.failure, func() prometheus.Counter { return em.k8sTotal.WithLabelValues(em.name, typ, "error") }).Inc()
		return
	}
	g.Set(1)
	lazy(&s.success, func() prometheus.Counter { return em.k8sTotal.WithLabelValues(em.name, typ, "success") }).Inc()
}

// lazy returns *p, resolving it with get the first time (a race resolves the same series twice).
func lazy[T any](p *atomic.Pointer[T], get func() T) T {
	if v := p.Load(); v != nil {
		return *v
	}
	v := get()
	p.Store(&v)
	return v
}

func (em *entryMetrics) observeRun(d time.Duration, ok bool) {
	if em == nil || em.success == nil {
		return
	}
	if ok {
		em.success.Inc()
	} else {
		em.failure.Inc()
	}
	em.duration.Observe(d.Seconds())
}

// observeProbe counts one request to an aggregate probe path under the apiserver's names: each
// entry it reports, leaving out the excluded ones.
func (m *Manager) observeProbe(s *snapshot, path int, exclude []string) {
	if !m.k8sMetrics || m.metrics == nil {
		return
	}
	pi := pathProbe[path]
	for i := range s.entries {
		e := &s.entries[i]
		if e.Probes&probeByIdx[pi] == 0 || slices.Contains(exclude, e.Name) {
			continue
		}
		s.metrics[i].observeProbe(path, e.fails[pi])
	}
}

func (m *metrics) setProbes(healthy [numProbes]bool) {
	if m == nil {
		return
	}
	for i := range numProbes {
		m.probes[i].Set(boolFloat(healthy[i]))
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

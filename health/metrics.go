package health

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. The kubernetes_* names are the apiserver's (k8s.io/component-base slis), exported
// only with WithKubernetesMetricNames.
const (
	metricCheckStatus   = "vitals_health_check_status"
	metricCheckUp       = "vitals_health_check_up"
	metricCheckResults  = "vitals_health_check_results_total"
	metricCheckDuration = "vitals_health_check_duration_seconds"
	metricProbeStatus   = "vitals_health_probe_status"
	metricK8sGauge      = "kubernetes_healthcheck"
	metricK8sTotal      = "kubernetes_healthchecks_total"
)

var k8sProbeType = [numProbes]string{"livez", "readyz", "startupz"}

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
	status     [numProbes]prometheus.Gauge
	up         prometheus.Gauge
	success    prometheus.Counter
	failure    prometheus.Counter
	duration   prometheus.Observer
	k8sGauge   [numProbes]prometheus.Gauge
	k8sSuccess [numProbes]prometheus.Counter
	k8sError   [numProbes]prometheus.Counter
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
			Help: "This metric records the result of a single healthcheck.",
		}, []string{"name", "type"}))
		m.k8sTotal = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricK8sTotal,
			Help: "This metric records the results of all healthcheck.",
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
	em := &entryMetrics{up: m.up.WithLabelValues(name, string(kind), severity.String())}
	for i, p := range probeByIdx {
		if probes&p == 0 {
			continue
		}
		em.status[i] = m.status.WithLabelValues(name, string(kind), p.String())
		if m.k8sGauge != nil {
			em.k8sGauge[i] = m.k8sGauge.WithLabelValues(name, k8sProbeType[i])
			if kind == KindCheck {
				em.k8sSuccess[i] = m.k8sTotal.WithLabelValues(name, k8sProbeType[i], "success")
				em.k8sError[i] = m.k8sTotal.WithLabelValues(name, k8sProbeType[i], "error")
			}
		}
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
		if em.k8sGauge[i] != nil {
			em.k8sGauge[i].Set(boolFloat(!fails[i]))
		}
	}
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
	for i := range numProbes {
		switch {
		case ok && em.k8sSuccess[i] != nil:
			em.k8sSuccess[i].Inc()
		case !ok && em.k8sError[i] != nil:
			em.k8sError[i].Inc()
		}
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

package flight

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Metrics of flight. A cluster is labelled vitalscluster="namespace/name". Decisions of the remediation
// policy are its own metrics (vitals_remediation_*).
type Metrics struct {
	Passes      *prometheus.CounterVec   // vitalscluster, result: ok, aborted, error
	Repairs     *prometheus.CounterVec   // repair, outcome: done, failed, held, dryrun
	Unhealthy   *prometheus.GaugeVec     // vitalscluster
	PassSeconds *prometheus.HistogramVec // result
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_flight_passes_total", Help: "Flight passes by result (ok, aborted, error).",
		}, []string{"vitalscluster", "result"}),
		Repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_flight_repairs_total", Help: "Changes flight's repairs asked for, by repair and outcome (done, failed, held, dryrun).",
		}, []string{"repair", "outcome"}),
		Unhealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_flight_unhealthy_nodes", Help: "Servers of the cluster that a repair found broken, as of the last complete pass.",
		}, []string{"vitalscluster"}),
		PassSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vitals_flight_pass_duration_seconds", Help: "Duration of flight passes.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.Passes, m.Repairs, m.Unhealthy, m.PassSeconds)
	}
	return m
}

func (m *Metrics) forget(key types.NamespacedName) {
	l := prometheus.Labels{"vitalscluster": key.String()}
	m.Passes.DeletePartialMatch(l)
	m.Unhealthy.DeletePartialMatch(l)
}

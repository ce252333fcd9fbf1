package pass

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Metrics of one controller's passes, named vitals_<controller>_... A cluster is labelled
// vitalscluster="namespace/name" (a label named cluster collides with a common external label, namespace
// with the scrape target's own). Per-pass times and results are here, never in the status: a status
// write per pass would bound the fleet.
type Metrics struct {
	Passes      *prometheus.CounterVec   // vitalscluster, result: ok, aborted, error
	PassSeconds *prometheus.HistogramVec // result
	// LastSuccess is when the last complete pass of each cluster ended (Unix seconds).
	LastSuccess *prometheus.GaugeVec   // vitalscluster
	Repairs     *prometheus.CounterVec // repair, outcome: done, failed, held, dryrun
}

// NewMetrics creates controller's pass metrics and registers them with reg (nil: not registered).
func NewMetrics(controller string, reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "vitals", Subsystem: controller, Name: "passes_total", Help: "Passes of the " + controller + " controller by result (ok, aborted, error).",
		}, []string{"vitalscluster", "result"}),
		PassSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "vitals", Subsystem: controller, Name: "pass_duration_seconds", Help: "Duration of the " + controller + " controller's passes.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, []string{"result"}),
		LastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "vitals", Subsystem: controller, Name: "last_success_timestamp_seconds", Help: "When the " + controller + " controller's last complete pass of the cluster ended (Unix seconds).",
		}, []string{"vitalscluster"}),
		Repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "vitals", Subsystem: controller, Name: "repairs_total", Help: "Changes the " + controller + " controller's repairs asked for, by repair and outcome (done, failed, held, dryrun).",
		}, []string{"repair", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.Passes, m.PassSeconds, m.LastSuccess, m.Repairs)
	}
	return m
}

// Observe counts one pass of key that ended at end after took, with result (ResultOK, ResultAborted,
// ResultError); an ok pass sets the cluster's LastSuccess.
func (m *Metrics) Observe(key types.NamespacedName, result string, took time.Duration, end time.Time) {
	m.Passes.WithLabelValues(key.String(), result).Inc()
	m.PassSeconds.WithLabelValues(result).Observe(took.Seconds())
	if result == ResultOK {
		m.LastSuccess.WithLabelValues(key.String()).Set(float64(end.UnixNano()) / 1e9)
	}
}

func (m *Metrics) repair(repair, outcome string) { m.Repairs.WithLabelValues(repair, outcome).Inc() }

// Forget drops the series of a cluster that is gone.
func (m *Metrics) Forget(key types.NamespacedName) {
	l := prometheus.Labels{"vitalscluster": key.String()}
	m.Passes.DeletePartialMatch(l)
	m.LastSuccess.DeletePartialMatch(l)
}

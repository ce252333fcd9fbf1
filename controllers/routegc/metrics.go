package routegc

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the route collector. Labels: cluster is "namespace/name".
type Metrics struct {
	Passes      *prometheus.CounterVec   // result: ok, aborted, gated, error
	Removed     *prometheus.CounterVec   // cluster
	Skipped     *prometheus.CounterVec   // cluster, reason
	Failed      *prometheus.CounterVec   // cluster
	Routes      *prometheus.GaugeVec     // cluster, verdict
	PassSeconds *prometheus.HistogramVec // result
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_routegc_passes_total", Help: "Route collector passes by result (ok, aborted, gated, error).",
		}, []string{"cluster", "result"}),
		Removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_routegc_routes_removed_total", Help: "Orphaned routes removed from routers.",
		}, []string{"cluster"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_routegc_routes_skipped_total", Help: "Orphaned routes a safety rule kept (proof pending, protected, budget, dry run).",
		}, []string{"cluster", "reason"}),
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_routegc_removal_failures_total", Help: "Route removals that failed.",
		}, []string{"cluster"}),
		Routes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_routegc_routes", Help: "Routes of the cluster's router by verdict, as of the last complete pass.",
		}, []string{"cluster", "verdict"}),
		PassSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vitals_routegc_pass_duration_seconds", Help: "Duration of route collector passes.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.Passes, m.Removed, m.Skipped, m.Failed, m.Routes, m.PassSeconds)
	}
	return m
}

var allVerdicts = []Verdict{Foreign, Invalid, Protected, Live, Suspect, Remove, WouldRemove, OverBudget}

func (m *Metrics) forget(cluster string) {
	m.Removed.DeleteLabelValues(cluster)
	m.Failed.DeleteLabelValues(cluster)
	m.Skipped.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	m.Passes.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	m.Routes.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}

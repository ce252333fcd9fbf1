package routegc

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/routes"
)

// Metrics of the route collector's own; its passes are counted by the runner (vitals_routegc_passes_total,
// vitals_routegc_pass_duration_seconds, ...) and the policy's decisions by the policy (vitals_remediation_*).
// A cluster is labelled vitalscluster="namespace/name".
type Metrics struct {
	Removed *prometheus.CounterVec // vitalscluster
	Skipped *prometheus.CounterVec // vitalscluster, reason (routegc's own rules)
	Failed  *prometheus.CounterVec // vitalscluster
	Routes  *prometheus.GaugeVec   // vitalscluster, verdict
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_routegc_routes_removed_total", Help: "Orphaned routes removed from routers.",
		}, []string{"vitalscluster"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_routegc_routes_skipped_total", Help: "Orphaned routes one of the route collector's own rules kept (ProofPending, Protected, PassBudget).",
		}, []string{"vitalscluster", "reason"}),
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_routegc_removal_failures_total", Help: "Route removals that failed.",
		}, []string{"vitalscluster"}),
		Routes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_routegc_routes", Help: "Routes of the cluster's router by verdict, as of the last complete pass.",
		}, []string{"vitalscluster", "verdict"}),
	}
	if reg != nil {
		reg.MustRegister(m.Removed, m.Skipped, m.Failed, m.Routes)
	}
	return m
}

var allVerdicts = []routes.Verdict{routes.Foreign, routes.Invalid, routes.Protected, routes.Live, routes.Suspect, routes.Remove, routes.WouldRemove, routes.Held, routes.OverBudget}

func (m *Metrics) forget(key types.NamespacedName) {
	l := prometheus.Labels{"vitalscluster": key.String()}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.Removed, m.Skipped, m.Failed, m.Routes} {
		v.DeletePartialMatch(l)
	}
}

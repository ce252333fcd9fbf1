package cloudheal

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Metrics of cloudheal's own; its passes are counted by the runner (vitals_cloudheal_passes_total, ...) and
// the policy's decisions by the policy (vitals_remediation_*). A cluster is labelled
// vitalscluster="namespace/name".
type Metrics struct {
	// StaleAttachments are the attachments of the cluster's volumes to servers that are gone, as of the
	// last complete pass.
	StaleAttachments *prometheus.GaugeVec // vitalscluster
	// Detached counts the stale attachments removed.
	Detached *prometheus.CounterVec // vitalscluster
	// DetachFailures counts removals that failed.
	DetachFailures *prometheus.CounterVec // vitalscluster
	// RulesRestored counts the rules restored to load balancers' security groups.
	RulesRestored *prometheus.CounterVec // vitalscluster
	// LBRulesMissing are the rules the load balancers' groups miss after the last complete pass.
	LBRulesMissing *prometheus.GaugeVec // vitalscluster
	// LBNotConverged are the load balancers past their timeout without converging, as of the last pass.
	LBNotConverged *prometheus.GaugeVec // vitalscluster
	// Debris are the objects seen as the live cluster's debris in the last complete pass.
	Debris *prometheus.GaugeVec // vitalscluster, kind
	// DebrisRemoved counts the debris objects removed.
	DebrisRemoved *prometheus.CounterVec // vitalscluster, kind
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		StaleAttachments: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_cloudheal_stale_attachments", Help: "Attachments of the cluster's volumes to servers that are gone, as of the last complete pass.",
		}, []string{"vitalscluster"}),
		Detached: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_cloudheal_attachments_removed_total", Help: "Stale volume attachments removed.",
		}, []string{"vitalscluster"}),
		DetachFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_cloudheal_attachment_removal_failures_total", Help: "Removals of stale volume attachments that failed.",
		}, []string{"vitalscluster"}),
		RulesRestored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_cloudheal_lb_rules_restored_total", Help: "Rules restored to the cloud controller manager's load-balancer security groups.",
		}, []string{"vitalscluster"}),
		LBRulesMissing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_cloudheal_lb_rules_missing", Help: "Rules the cloud controller manager's load-balancer security groups miss after the last complete pass.",
		}, []string{"vitalscluster"}),
		LBNotConverged: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_cloudheal_lb_not_converged", Help: "Load balancers of the cluster's Services that stayed PENDING_*, ERROR or DEGRADED past their timeout, as of the last complete pass.",
		}, []string{"vitalscluster"}),
		Debris: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_cloudheal_debris", Help: "Load balancers, floating IPs and ports seen as the live cluster's debris in the last complete pass, by kind.",
		}, []string{"vitalscluster", "kind"}),
		DebrisRemoved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_cloudheal_debris_removed_total", Help: "Debris of the live cluster removed, by kind.",
		}, []string{"vitalscluster", "kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.StaleAttachments, m.Detached, m.DetachFailures, m.RulesRestored, m.LBRulesMissing, m.LBNotConverged, m.Debris, m.DebrisRemoved)
	}
	return m
}

func (m *Metrics) forget(key types.NamespacedName) {
	l := prometheus.Labels{"vitalscluster": key.String()}
	m.StaleAttachments.DeletePartialMatch(l)
	m.Detached.DeletePartialMatch(l)
	m.DetachFailures.DeletePartialMatch(l)
	m.RulesRestored.DeletePartialMatch(l)
	m.LBRulesMissing.DeletePartialMatch(l)
	m.LBNotConverged.DeletePartialMatch(l)
	m.Debris.DeletePartialMatch(l)
	m.DebrisRemoved.DeletePartialMatch(l)
}

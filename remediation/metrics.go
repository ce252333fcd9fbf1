package remediation

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the remediation policy. A cluster is labelled vitalscluster="namespace/name" (a label named
// cluster collides with a common external label, namespace with the scrape target's own).
type Metrics struct {
	// Actions counts decisions: controller, verb, outcome (taken, failed, dryrun, held), reason.
	Actions *prometheus.CounterVec
	// BudgetRemaining is how many actions a cluster's window still allows (vitalscluster).
	BudgetRemaining *prometheus.GaugeVec
	// OperatorBudgetRemaining is how many actions the operator-wide window still allows.
	OperatorBudgetRemaining prometheus.Gauge
	// OperatorPaused is 1 while the operator-wide pause holds every action.
	OperatorPaused prometheus.Gauge
}

// Outcomes in the outcome label.
const (
	outcomeTaken  = "taken"
	outcomeFailed = "failed"
	outcomeDryRun = "dryrun"
	outcomeHeld   = "held"
)

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_remediation_actions_total",
			Help: "Decisions of the remediation policy by controller, verb, outcome (taken, failed, dryrun, held) and reason.",
		}, []string{"controller", "verb", "outcome", "reason"}),
		BudgetRemaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_remediation_budget_remaining",
			Help: "Destructive actions the VitalsCluster's budget window still allows.",
		}, []string{"vitalscluster"}),
		OperatorBudgetRemaining: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vitals_remediation_operator_budget_remaining",
			Help: "Destructive actions the operator-wide budget window still allows.",
		}),
		OperatorPaused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vitals_remediation_operator_paused",
			Help: "1 while the operator-wide pause (flag or switch) holds every destructive action.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Actions, m.BudgetRemaining, m.OperatorBudgetRemaining, m.OperatorPaused)
	}
	return m
}

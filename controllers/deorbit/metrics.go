package deorbit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Metrics of deorbit (names agreed with the chart's alert rules). A cluster is labelled
// vitalscluster="namespace/name"; every series of a cluster is removed when its finalizer goes or it is
// gone, so that a deleted cluster leaves no series behind. A nil *Metrics records nothing.
type Metrics struct {
	// StartTime is the unix time deletion began; removed when the finalizer goes.
	StartTime *prometheus.GaugeVec // vitalscluster
	// Debris counts the resources of the debris report by type after giving up, while the finalizer
	// is still on; removed when it goes.
	Debris *prometheus.GaugeVec // vitalscluster, type
	// Phase is 1 for the current phase; removed when the finalizer goes.
	Phase *prometheus.GaugeVec // vitalscluster, phase
	// Deletes counts the deletes by resource type and outcome (deleted, gone, failed, held, dryrun).
	Deletes *prometheus.CounterVec // type, outcome
	// DebrisLeft counts the resources left in debris reports by type, over every cluster (the alert on
	// debris; the DeorbitGaveUp Event names the cluster and the pieces).
	DebrisLeft *prometheus.CounterVec // type
}

// debrisTypes are the types a debris report holds; their DebrisLeft series start at 0, so that the
// first give-up is an increase.
var debrisTypes = []string{v1alpha1.DeorbitVolume, v1alpha1.DeorbitLoadBalancer, v1alpha1.DeorbitRoute, v1alpha1.DeorbitPort,
	v1alpha1.DeorbitFloatingIP, v1alpha1.DeorbitCloud}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		StartTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_deorbit_start_time_seconds", Help: "Unix time the deletion of a VitalsCluster began, while deorbit holds its finalizer.",
		}, []string{"vitalscluster"}),
		Debris: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_deorbit_debris", Help: "Cloud resources left in the debris report after deorbit gave up, by type.",
		}, []string{"vitalscluster", "type"}),
		Phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_deorbit_phase", Help: "1 for the deorbit phase a deleted VitalsCluster is in.",
		}, []string{"vitalscluster", "phase"}),
		Deletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_deorbit_deletes_total", Help: "Deletes deorbit asked for, by resource type and outcome (deleted, gone, failed, held, dryrun).",
		}, []string{"type", "outcome"}),
		DebrisLeft: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_deorbit_debris_left_total", Help: "Cloud resources left in the debris reports of every cluster deorbit gave up on, by type.",
		}, []string{"type"}),
	}
	for _, t := range debrisTypes {
		m.DebrisLeft.WithLabelValues(t)
	}
	if reg != nil {
		reg.MustRegister(m.StartTime, m.Debris, m.Phase, m.Deletes, m.DebrisLeft)
	}
	return m
}

// gaveUp counts a new debris report's resources.
func (m *Metrics) gaveUp(debris []v1alpha1.DeorbitResource) {
	if m == nil {
		return
	}
	for _, d := range debris {
		m.DebrisLeft.WithLabelValues(d.Type).Inc()
	}
}

func (m *Metrics) delete(typ, outcome string) {
	if m != nil {
		m.Deletes.WithLabelValues(typ, outcome).Inc()
	}
}

// observe sets the start time and the phase of a cluster being deorbited, and its debris report.
func (m *Metrics) observe(key string, st *v1alpha1.DeorbitStatus) {
	if m == nil || st == nil {
		return
	}
	if st.StartTime != nil {
		m.StartTime.WithLabelValues(key).Set(float64(st.StartTime.Unix()))
	}
	for _, p := range AllPhases {
		v := 0.0
		if p == st.Phase {
			v = 1
		}
		m.Phase.WithLabelValues(key, p).Set(v)
	}
	if st.Phase == v1alpha1.DeorbitPhaseGaveUp {
		m.Debris.DeletePartialMatch(prometheus.Labels{"vitalscluster": key})
		for _, d := range st.Debris {
			m.Debris.WithLabelValues(key, d.Type).Inc()
		}
	}
}

// forget drops every series of a cluster: its finalizer went, it is gone, or it is managed (again).
func (m *Metrics) forget(key string) {
	if m == nil {
		return
	}
	m.StartTime.DeleteLabelValues(key)
	m.Phase.DeletePartialMatch(prometheus.Labels{"vitalscluster": key})
	m.Debris.DeletePartialMatch(prometheus.Labels{"vitalscluster": key})
}

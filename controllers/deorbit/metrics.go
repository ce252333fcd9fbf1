package deorbit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Metrics of deorbit (names agreed with the chart's alert rules). A cluster is labelled
// vitalscluster="namespace/name". A nil *Metrics records nothing.
type Metrics struct {
	// StartTime is the unix time deletion began; removed when the finalizer goes.
	StartTime *prometheus.GaugeVec // vitalscluster
	// Debris counts the resources of the debris report by type after giving up; kept after the
	// finalizer went (the alert needs it), cleared when a cluster of the same name is seen again.
	Debris *prometheus.GaugeVec // vitalscluster, type
	// Phase is 1 for the current phase; removed when the finalizer goes.
	Phase *prometheus.GaugeVec // vitalscluster, phase
	// Deletes counts the deletes by resource type and outcome (deleted, gone, failed, held, dryrun).
	Deletes *prometheus.CounterVec // type, outcome
}

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
	}
	if reg != nil {
		reg.MustRegister(m.StartTime, m.Debris, m.Phase, m.Deletes)
	}
	return m
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

// released drops the start time and phase of a cluster whose finalizer went (the debris stays).
func (m *Metrics) released(key string) {
	if m == nil {
		return
	}
	m.StartTime.DeleteLabelValues(key)
	m.Phase.DeletePartialMatch(prometheus.Labels{"vitalscluster": key})
}

// forget drops every gauge of a cluster, debris too (a cluster of that name is managed again).
func (m *Metrics) forget(key string) {
	if m == nil {
		return
	}
	m.released(key)
	m.Debris.DeletePartialMatch(prometheus.Labels{"vitalscluster": key})
}

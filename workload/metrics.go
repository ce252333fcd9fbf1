package workload

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// metrics of the workload accesses. A cluster is labelled vitalscluster="namespace/name", as in every
// metric of the operator (a label named cluster collides with a common external label, namespace with
// the scrape target's own).
type metrics struct {
	accesses prometheus.Gauge
	healthy  *prometheus.GaugeVec // vitalscluster, reason
	probes   *prometheus.CounterVec

	mu     sync.Mutex
	reason map[types.NamespacedName]string // each cluster's reachable series: its reason label
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		reason: map[types.NamespacedName]string{},
		accesses: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vitals_workload_accesses", Help: "Workload clusters the operator holds an access to.",
		}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_workload_reachable", Help: "1 when the workload cluster's API answered the last probe and its informers have synced; the reason label says why not.",
		}, []string{"vitalscluster", "reason"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_workload_probes_total", Help: "Health probes of workload clusters by reason (Reachable when it passed).",
		}, []string{"vitalscluster", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.accesses, m.healthy, m.probes)
	}
	return m
}

// report records one probe's result: one reachable series per cluster, with the current reason. The series of
// the reason before is deleted by its labels (a partial match would scan every cluster's series, at each probe).
func (m *metrics) report(key types.NamespacedName, err error) {
	reason := ReasonOf(err)
	m.probes.WithLabelValues(key.String(), reason).Inc()
	v := 0.0
	if err == nil {
		v = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.reason[key]; ok && old != reason {
		m.healthy.DeleteLabelValues(key.String(), old)
	}
	m.reason[key] = reason
	m.healthy.WithLabelValues(key.String(), reason).Set(v)
}

func (m *metrics) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.reason[key]; ok {
		m.healthy.DeleteLabelValues(key.String(), old)
		delete(m.reason, key)
	}
	m.probes.DeletePartialMatch(prometheus.Labels{"vitalscluster": key.String()})
}

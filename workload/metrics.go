package workload

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the workload accesses. Labels: cluster is "namespace/name".
type metrics struct {
	accesses prometheus.Gauge
	healthy  *prometheus.GaugeVec // cluster, reason
	probes   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		accesses: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vitals_workload_accesses", Help: "Workload clusters the operator holds an access to.",
		}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_workload_reachable", Help: "1 when the workload cluster's API answered the last probe and its informers have synced; the reason label says why not.",
		}, []string{"cluster", "reason"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_workload_probes_total", Help: "Health probes of workload clusters by reason (Reachable when it passed).",
		}, []string{"cluster", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.accesses, m.healthy, m.probes)
	}
	return m
}

// report records one probe's result: one reachable series per cluster, with the current reason.
func (m *metrics) report(cluster string, err error) {
	reason := ReasonOf(err)
	m.probes.WithLabelValues(cluster, reason).Inc()
	m.healthy.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	v := 0.0
	if err == nil {
		v = 1
	}
	m.healthy.WithLabelValues(cluster, reason).Set(v)
}

func (m *metrics) forget(cluster string) {
	m.healthy.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	m.probes.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}

package flight

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Metrics of flight's own; its passes and repairs are counted by the runner (vitals_flight_passes_total,
// vitals_flight_repairs_total, ...) and the policy's decisions by the policy (vitals_remediation_*). A
// cluster is labelled vitalscluster="namespace/name".
type Metrics struct {
	Unhealthy *prometheus.GaugeVec // vitalscluster
	HostsDown *prometheus.GaugeVec // vitalscluster
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Unhealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_flight_unhealthy_nodes", Help: "Servers of the cluster that a repair found broken, as of the last complete pass.",
		}, []string{"vitalscluster"}),
		HostsDown: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_flight_hosts_down", Help: "Compute hosts the node repair takes for down (several of the cluster's nodes on one Nova hostId unhealthy, none healthy), as of the last complete pass.",
		}, []string{"vitalscluster"}),
	}
	if reg != nil {
		reg.MustRegister(m.Unhealthy, m.HostsDown)
	}
	return m
}

func (m *Metrics) forget(key types.NamespacedName) {
	m.Unhealthy.DeletePartialMatch(prometheus.Labels{"vitalscluster": key.String()})
	m.HostsDown.DeletePartialMatch(prometheus.Labels{"vitalscluster": key.String()})
}

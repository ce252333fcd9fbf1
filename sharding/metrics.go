package sharding

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of a Coordinator.
type Metrics struct {
	ranges  *prometheus.GaugeVec
	held    prometheus.Gauge
	members prometheus.Gauge
	dropped *prometheus.CounterVec
	relists prometheus.Counter
}

// NewMetrics registers the metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ranges: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_shard_ranges", Help: "1 for each hash range of VitalsCluster UIDs this replica holds and acts on (range: its index, bounds: 0x…-0x…).",
		}, []string{"range", "bounds"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vitals_shard_ranges_held", Help: "How many hash ranges of VitalsCluster UIDs this replica holds.",
		}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vitals_shard_members", Help: "Live replicas this replica saw in its last round (itself included).",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_shard_dropped_total", Help: "Objects of other replicas' ranges the API server sent and this replica dropped, by call (list, watch): none where the server applies the shard selector (feature gate ShardedListAndWatch).",
		}, []string{"call"}),
		relists: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vitals_shard_relists_total", Help: "Lists of its held ranges a running watch of VitalsClusters made because they changed (the informer's store then follows them without listing again).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.ranges, m.held, m.members, m.dropped, m.relists)
	}
	return m
}

func (m *Metrics) report(s Space, held []int, members int) {
	m.ranges.Reset()
	for _, i := range held {
		m.ranges.WithLabelValues(itoa(i), s.Bounds(i)).Set(1)
	}
	m.held.Set(float64(len(held)))
	m.members.Set(float64(members))
}

func (m *Metrics) drop(call string, n int) {
	if n > 0 {
		m.dropped.WithLabelValues(call).Add(float64(n))
	}
}

func (m *Metrics) relist() { m.relists.Inc() }

package operator

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// ClusterConditionMetric is the name of the per-cluster condition metric.
const ClusterConditionMetric = "vitals_cluster_condition"

// clusterScrapeTimeout bounds one scrape's read of the cache (it waits only while the cache has not
// synced).
const clusterScrapeTimeout = 5 * time.Second

// clusterCollector exports each VitalsCluster's status conditions as kube-state-metrics exports a Node's:
// vitals_cluster_condition{vitalscluster, type, status} is 1 for the condition's status and 0 for the two
// others (status true, false, unknown), so that `== 1` selects either. It reads the manager's informer
// cache at scrape time (no request to the API server, no copy of the objects) and keeps no state:
// series go with their cluster or condition. 3 series per condition per cluster: with the N condition
// types the controllers write (about ten), 3·N per cluster (docs/operator.md, "Metrics").
//
// Only an active replica exports: with leader election the leader (a standby's cache holds the same
// clusters), with sharding every replica (its cache holds its ranges' clusters only), so that a sum over
// replicas counts each cluster once.
type clusterCollector struct {
	cache  client.Reader
	active func() bool
	log    *slog.Logger
	desc   *prometheus.Desc
}

func newClusterCollector(cache client.Reader, active func() bool, log *slog.Logger) *clusterCollector {
	return &clusterCollector{cache: cache, active: active, log: log,
		desc: prometheus.NewDesc(ClusterConditionMetric,
			"1 when the VitalsCluster's status condition of this type has this status (true, false, unknown), 0 otherwise; as of the operator's cache.",
			[]string{"vitalscluster", "type", "status"}, nil)}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// conditionStatuses are the statuses each condition has a series of, as kube-state-metrics names them.
var conditionStatuses = [...]metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	if c.active != nil && !c.active() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterScrapeTimeout)
	defer cancel()
	var list v1alpha1.VitalsClusterList
	// Read only: the cache's own objects, not copies.
	if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		c.log.Debug("cluster metrics: the cache could not be read", "err", err.Error())
		return
	}
	for i := range list.Items {
		vc := &list.Items[i]
		key := vc.Namespace + "/" + vc.Name
		for _, cond := range vc.Status.Conditions {
			for _, s := range conditionStatuses {
				v := 0.0
				if cond.Status == s {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, key, cond.Type, strings.ToLower(string(s)))
			}
		}
	}
}

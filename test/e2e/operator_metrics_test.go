package e2e

// The operator's own metrics, scraped from its /metrics as Prometheus does: the build information, the
// VitalsClusters' conditions read from its cache at scrape time (kube-state-metrics style), and the
// health checks under Vitals' names only, unless the kube-apiserver's names are asked for.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/operator"
)

func TestOperatorMetrics(t *testing.T) {
	parallel(t)
	cfg, c, ns := opKube(t)
	// No credentials anywhere: the access controller refuses the cluster (CloudVerified False), which
	// is a condition to export without any cloud.
	for _, tc := range []struct {
		name          string
		k8sNames      bool
		noClusterMets bool
	}{{"defaults", false, false}, {"kubernetes names, no cluster metrics", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &v1alpha1.VitalsCluster{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m-" + opRandHex(3)},
				Spec: v1alpha1.ClusterSpec{
					OpenStack: v1alpha1.OpenStackSpec{RouterID: "r-1"},
					PodCIDRs:  []v1alpha1.CIDR{"198.19.0.0/16"},
				},
			}
			if err := c.Create(context.Background(), cl); err != nil {
				t.Fatal(err)
			}
			r := opStart(t, operator.Options{RestConfig: cfg, Namespace: ns, LeaderElectionNamespace: ns,
				LeaderElectionID: "vitals-metrics-" + opRandHex(3), Identity: "metrics",
				KubernetesHealthMetricNames: tc.k8sNames, NoClusterMetrics: tc.noClusterMets})
			key := ns + "/" + cl.Name
			var body string
			opEventually(t, 2*time.Minute, "the operator's /metrics", func() (bool, string) {
				// A probe first: the kube-apiserver's names count probe requests.
				probe(r.op.HealthAddr(), "/readyz")
				code, b := probe(r.op.MetricsAddr(), "/metrics")
				body = b
				if code != 200 {
					return false, b
				}
				if tc.noClusterMets {
					return strings.Contains(b, "vitals_build_info{"), "no vitals_build_info yet"
				}
				return strings.Contains(b, `vitals_cluster_condition{status="false",type="CloudVerified",vitalscluster="`+key+`"} 1`),
					"no CloudVerified=False series of " + key
			})
			for want, present := range map[string]bool{
				"vitals_build_info{commit=":                                            true,
				"vitals_health_check_status{":                                          true,
				"kubernetes_healthcheck{":                                              tc.k8sNames,
				"kubernetes_healthchecks_total{":                                       tc.k8sNames,
				"vitals_cluster_condition{":                                            !tc.noClusterMets,
				`status="true",type="CloudVerified",vitalscluster="` + key + `"} 0`:    !tc.noClusterMets,
				`status="unknown",type="CloudVerified",vitalscluster="` + key + `"} 0`: !tc.noClusterMets,
			} {
				if strings.Contains(body, want) != present {
					t.Errorf("/metrics holds %q: %v, want %v", want, !present, present)
				}
			}
			// The series go with the cluster.
			if !tc.noClusterMets {
				if err := c.Delete(context.Background(), cl); err != nil {
					t.Fatal(err)
				}
				opEventually(t, 2*time.Minute, "the cluster deleted (never proven: no deorbit finalizer)", func() (bool, string) {
					err := c.Get(context.Background(), client.ObjectKeyFromObject(cl), &v1alpha1.VitalsCluster{})
					return apierrors.IsNotFound(err), fmt.Sprint(err)
				})
				opEventually(t, time.Minute, "the deleted cluster's series gone", func() (bool, string) {
					_, b := probe(r.op.MetricsAddr(), "/metrics")
					return !strings.Contains(b, `vitalscluster="`+key+`"`), "still there"
				})
			}
		})
	}
}

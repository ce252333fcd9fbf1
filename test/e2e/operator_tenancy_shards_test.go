package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/tenancy"
)

// TestOperatorTenancyOverlapAcrossShards: the pod-CIDR overlap rule is a rule across VitalsClusters, so it
// holds on two sharded replicas (the chart's default) whose caches each hold their own clusters only: a
// younger cluster on the same router whose pod CIDR overlaps the established one's is refused by whichever
// replica holds it, the one that does not cache the established cluster included. Real kube-apiserver,
// Keystone and Neutron.
func TestOperatorTenancyOverlapAcrossShards(t *testing.T) {
	parallel(t)
	f := newTenancyFixture(t, false)
	cfg := testenv.Kube(t)
	var rs []*opRun
	for i := range 2 {
		id := fmt.Sprintf("overlap-replica-%d-%s", i, opRandHex(3))
		rs = append(rs, opStart(t, operator.Options{
			RestConfig: cfg, Namespace: f.ns, HealthAddr: "0", MetricsAddr: "0", LeaderElectionNamespace: f.ns, Identity: id,
			Sharding:        &operator.Sharding{Ranges: 8, LeaseDuration: 12 * time.Second, RenewInterval: 2 * time.Second, SafetyMargin: 8 * time.Second},
			WriteTimeout:    6 * time.Second,
			TrustedAuthURLs: []string{f.env.AuthURL},
			CheckInterval:   2 * time.Second, CheckTimeout: 2 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}))
	}
	opEventually(t, 90*time.Second, "4 ranges per replica", func() (bool, string) {
		var got []string
		ok := true
		for _, r := range rs {
			held, _ := r.op.Shard().Held()
			got = append(got, fmt.Sprint(held))
			ok = ok && len(held) == 4
		}
		return ok, strings.Join(got, " ")
	})
	verified := func(key client.ObjectKey) (*v1alpha1.VitalsCluster, *metav1.Condition) {
		var vc v1alpha1.VitalsCluster
		if err := f.c.Get(context.Background(), key, &vc); err != nil {
			return nil, nil
		}
		return &vc, meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionCloudVerified)
	}
	old := f.cluster("established", func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.18.0.0/16"} })
	var oldVC *v1alpha1.VitalsCluster
	opEventually(t, 3*time.Minute, "the established cluster verified", func() (bool, string) {
		vc, c := verified(old)
		if c == nil {
			return false, "no condition"
		}
		oldVC = vc
		return c.Reason == tenancy.ReasonVerified && vc.Status.ProjectID != "", c.Reason + ": " + c.Message
	})
	holder := func(vc *v1alpha1.VitalsCluster) int {
		for i, r := range rs {
			if r.op.Shard().Holds(vc.UID) {
				return i
			}
		}
		return -1
	}
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second
	// Younger clusters until one is held by the replica that does not hold the established cluster.
	other := false
	var young []client.ObjectKey
	for i := 0; i < 8 && !other; i++ {
		key := f.cluster(fmt.Sprintf("younger-%d", i), func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.18.128.0/17"} })
		young = append(young, key)
		var vc v1alpha1.VitalsCluster
		if err := f.c.Get(context.Background(), key, &vc); err != nil {
			t.Fatal(err)
		}
		other = holder(&vc) != holder(oldVC)
	}
	if !other {
		t.Fatal("8 younger clusters all landed on the established cluster's replica")
	}
	for _, key := range young {
		opEventually(t, 3*time.Minute, key.Name+" refused for the overlap", func() (bool, string) {
			_, c := verified(key)
			if c == nil {
				return false, "no condition"
			}
			return c.Reason == tenancy.ReasonPodCIDROverlap && strings.Contains(c.Message, f.ns+"/established"), c.Reason + ": " + c.Message
		})
	}
	if _, c := verified(old); c == nil || c.Reason != tenancy.ReasonVerified {
		t.Fatalf("the established cluster after the younger came: %+v", c)
	}
}

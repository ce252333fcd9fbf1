package e2e

// The remediation policy inside the whole operator: the operator-wide pause is a ConfigMap flipped at
// run time, without a restart.

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
)

func TestOperatorPauseSwitchAtRunTime(t *testing.T) {
	parallel(t)
	env := testenv.OpenStack(t)
	cfg, c, ns := opKube(t)
	auth, cloud, n := opCloudNet(t, env)
	n.Port(5)
	live := openstack.Route{Destination: "198.19.1.0/24", NextHop: n.IP(5)}
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: n.IP(99)}
	n.SetRoutes(live, orphan)

	ctx := context.Background()
	sw := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: operator.DefaultPauseConfigMap},
		Data: map[string]string{operator.PauseKey: "true", "reason": "e2e maintenance"}}
	if err := c.Create(ctx, sw); err != nil {
		t.Fatal(err)
	}
	r := opStart(t, operator.Options{
		RestConfig: cfg, Namespace: ns, LeaderElectionNamespace: ns, Identity: "pause-switch", Cloud: &auth,
		TrustedNamespaces: []string{ns}, // the cluster below names no credentials Secret
		CheckInterval:     2 * time.Second, CheckTimeout: 2 * time.Second, ComponentDeadline: 30 * time.Second,
	})
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paused", Annotations: map[string]string{remediation.AnnotationUnsafeShortProofAge: "true"}},
		Spec: v1alpha1.ClusterSpec{
			OpenStack:   v1alpha1.OpenStackSpec{RouterID: n.Router, ProjectID: cloud.ProjectID(), SubnetID: n.Subnet},
			PodCIDRs:    []v1alpha1.CIDR{"198.19.0.0/16"},
			Remediation: v1alpha1.RemediationSpec{MinProofAge: &metav1.Duration{Duration: 2 * time.Second}},
			Controllers: v1alpha1.ControllersSpec{RouteGC: v1alpha1.RouteGCSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Second}},
				AddressSources: []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts},
			}},
		},
	}
	if err := c.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cl)
	opEventually(t, 3*time.Minute, "the removal held by the operator-wide pause", func() (bool, string) {
		var got v1alpha1.VitalsCluster
		if err := c.Get(ctx, key, &got); err != nil {
			return false, err.Error()
		}
		cond := condition(&got, v1alpha1.ConditionRemediationAllowed)
		return cond.Reason == remediation.ReasonOperatorPaused && hasAction(&got, v1alpha1.ActionSkipped, remediation.ReasonOperatorPaused, routeObject(orphan)),
			cond.Reason + ": " + cond.Message
	})
	if !n.Routes()[orphan] {
		t.Fatal("the orphaned route was removed while the operator was paused")
	}
	if v := gaugeValue(t, r, "vitals_remediation_operator_paused"); v != 1 {
		t.Errorf("vitals_remediation_operator_paused = %v while paused, want 1", v)
	}
	// A value that is neither "true" nor "false" still pauses, and says so.
	sw.Data[operator.PauseKey] = "yes please"
	if err := c.Update(ctx, sw); err != nil {
		t.Fatal(err)
	}
	opEventually(t, 2*time.Minute, "a misspelt switch holds too", func() (bool, string) {
		var got v1alpha1.VitalsCluster
		if err := c.Get(ctx, key, &got); err != nil {
			return false, err.Error()
		}
		cond := condition(&got, v1alpha1.ConditionRemediationAllowed)
		return cond.Reason == remediation.ReasonOperatorPaused && strings.Contains(cond.Message, "treated as paused"), cond.Reason + ": " + cond.Message
	})
	if !n.Routes()[orphan] {
		t.Fatal("the orphaned route was removed while the switch said \"yes please\"")
	}
	// Flip the switch: the next passes remove the route, without a restart.
	sw.Data[operator.PauseKey] = "false"
	if err := c.Update(ctx, sw); err != nil {
		t.Fatal(err)
	}
	opEventually(t, 3*time.Minute, "the orphaned route removed once the switch is off", func() (bool, string) {
		return !n.Routes()[orphan], "still there"
	})
	if !n.Routes()[live] {
		t.Fatal("the live route was removed")
	}
	if got := gaugeValue(t, r, "vitals_remediation_operator_paused"); got != 0 {
		t.Errorf("vitals_remediation_operator_paused = %v after the switch went off, want 0", got)
	}
}

// gaugeValue reads one unlabelled gauge from the operator's registry (-1 when absent).
func gaugeValue(t *testing.T, r *opRun, name string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

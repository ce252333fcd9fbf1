package e2e

// LoadBalancersConverged against real Octavia: octavia-worker paused (SIGSTOP, as a hung worker) while a
// load balancer is created leaves it PENDING_CREATE for as long as the pause lasts.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/cloudheal"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// TestOperatorCloudHealLBConvergence: a load balancer that real Octavia leaves PENDING_CREATE (its worker
// paused mid-create) turns LoadBalancersConverged False after the repair's timeout, with one Warning Event on
// the Service naming the state and the administrator's command; once the worker is back and the load balancer
// ACTIVE, the condition is True again with a Normal Event. Not parallel: it pauses the shared octavia-worker,
// which every other test's load balancers wait for meanwhile (Go runs the parallel tests after the sequential
// ones).
func TestOperatorCloudHealLBConvergence(t *testing.T) {
	f := newCHFixture(t)
	ctx := context.Background()
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		t.Fatal(err)
	}
	cl.Spec.Controllers.CloudHeal.Repairs.LoadBalancers.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
	if err := f.c.Update(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	svc := f.lbService("web")
	lc, err := f.cloud.Client(openstack.ServiceLoadBalancer)
	if err != nil {
		t.Fatal(err)
	}
	resume := testenv.PauseOpenStackService(t, "octavia-worker")
	lb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: ccm.LoadBalancerName(f.name, svc.Namespace, svc.Name), VipSubnetID: f.net.Subnet}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		t.Helper()
		got, err := loadbalancers.Get(ctx, lc, lb.ID).Extract()
		if err != nil {
			return "read: " + err.Error()
		}
		return got.ProvisioningStatus
	}
	t.Cleanup(func() {
		resume()
		opEventually(t, 5*time.Minute, "the load balancer out of PENDING_*", func() (bool, string) {
			s := status()
			return !strings.HasPrefix(s, "PENDING_"), s
		})
		_ = loadbalancers.Delete(context.Background(), lc, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	})
	if s := status(); s != "PENDING_CREATE" {
		t.Fatalf("with octavia-worker paused the load balancer is %s, want PENDING_CREATE", s)
	}
	converged := func(when string, want metav1.ConditionStatus, reason string) *v1alpha1.VitalsCluster {
		t.Helper()
		cl := f.pass()
		cd := condition(cl, v1alpha1.ConditionLoadBalancersConverged)
		if cd.Status != want || cd.Reason != reason {
			t.Fatalf("%s: LoadBalancersConverged = %s/%s (%s), want %s/%s", when, cd.Status, cd.Reason, cd.Message, want, reason)
		}
		return cl
	}
	converged("first sighting", metav1.ConditionTrue, cloudheal.ReasonConverged)
	converged("inside the timeout", metav1.ConditionTrue, cloudheal.ReasonConverged)
	cd := condition(converged("past the timeout", metav1.ConditionFalse, cloudheal.ReasonNotConverged), v1alpha1.ConditionLoadBalancersConverged)
	if !strings.Contains(cd.Message, "PENDING_CREATE") || !strings.Contains(cd.Message, "openstack loadbalancer failover "+lb.ID) {
		t.Fatalf("the message names neither the state nor the administrator's command: %s", cd.Message)
	}
	evs := serviceEvents(t, f.c, f.ns, "web")
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning/"+cloudheal.ReasonLBNotConverged) {
		t.Fatalf("Events on the Service: %v, want one Warning %s", evs, cloudheal.ReasonLBNotConverged)
	}
	// the worker back: Octavia finishes the create
	resume()
	opEventually(t, 5*time.Minute, "the load balancer ACTIVE once octavia-worker runs again", func() (bool, string) {
		s := status()
		return s == "ACTIVE", s
	})
	cl2 := converged("converged", metav1.ConditionTrue, cloudheal.ReasonConverged)
	evs = serviceEvents(t, f.c, f.ns, "web")
	normal := 0
	for _, e := range evs {
		if strings.HasPrefix(e, "Normal/"+cloudheal.ReasonLBConverged) {
			normal++
		}
	}
	if len(evs) != 2 || normal != 1 {
		t.Fatalf("Events on the Service after it converged: %v, want the Warning and one Normal %s", evs, cloudheal.ReasonLBConverged)
	}
	if s := cl2.Status.CloudHeal; s != nil && len(s.StuckLoadBalancers) != 0 {
		t.Fatalf("stuck load balancers after it converged: %s", fmt.Sprint(s.StuckLoadBalancers))
	}
}

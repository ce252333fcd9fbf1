package cloudheal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbWarnService records an Event on a Service in the workload cluster (a safe write).
const VerbWarnService = "RecordServiceEvent"

// Reasons of the LoadBalancersConverged condition and of the Services' Events.
const (
	ReasonConverged    = "Converged"
	ReasonNotConverged = "NotConverged"
	// ReasonLBNotConverged and ReasonLBConverged are the Events on the Service.
	ReasonLBNotConverged = "LoadBalancerNotConverging"
	ReasonLBConverged    = "LoadBalancerConverged"
)

// octaviaStatuses are the values this repair writes into messages (anything else the cloud answers is
// written as "unknown": nothing a tenant's cloud answers reaches a condition).
var octaviaStatuses = []string{"ACTIVE", "ERROR", "PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE", "ONLINE", "OFFLINE", "DEGRADED", "DRAINING", "NO_MONITOR"}

func known(s string) string {
	if slices.Contains(octaviaStatuses, s) {
		return s
	}
	return "unknown"
}

// notConverged says why lb has not converged ("" when it has): its provisioning status stays PENDING_* or
// ERROR, or its operating status is ERROR or DEGRADED while every Node is Ready.
func notConverged(lb *openstack.LoadBalancer, nodesReady bool) string {
	switch ps := lb.ProvisioningStatus; {
	case strings.HasPrefix(ps, "PENDING_") || ps == "ERROR":
		return "provisioning status " + known(ps)
	case ps == "ACTIVE" && nodesReady && (lb.OperatingStatus == "ERROR" || lb.OperatingStatus == "DEGRADED"):
		return "operating status " + lb.OperatingStatus + " while every Node is Ready"
	}
	return ""
}

// adminFix names what only an administrator can do for lb, with the exact command.
func adminFix(lb *openstack.LoadBalancer) string {
	switch ps := lb.ProvisioningStatus; {
	case strings.HasPrefix(ps, "PENDING_"):
		return fmt.Sprintf("Octavia refuses every change to a load balancer in %s and skips its failover; an administrator who confirmed that no octavia-worker "+
			"still works on it sets it to ERROR in Octavia's database (UPDATE load_balancer SET provisioning_status='ERROR' WHERE id='%s';), then runs "+
			"`openstack loadbalancer failover %s`", known(ps), lb.ID, lb.ID)
	case ps == "ERROR":
		return fmt.Sprintf("an administrator runs `openstack loadbalancer failover %s` (failover is an administrator's right by Octavia's default policy); "+
			"or delete the Service's load balancer so that the cloud controller manager makes it again (its address changes unless it is a floating IP kept "+
			"with loadbalancer.openstack.org/keep-floatingip)", lb.ID)
	}
	return fmt.Sprintf("`openstack loadbalancer status show %s` names the members down; their nodes are Ready: check the node ports' security groups "+
		"(LoadBalancerSecurityGroupsHealthy) and the health monitor", lb.ID)
}

// LBConvergence reports the load balancers of the cluster's Services that do not converge.
type LBConvergence struct{ m *Metrics }

// Name implements pass.Repair.
func (LBConvergence) Name() string { return "loadBalancers" }

// Conditions implements pass.Repair.
func (LBConvergence) Conditions() []string { return []string{v1alpha1.ConditionLoadBalancersConverged} }

// Enabled implements pass.Repair.
func (LBConvergence) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.CloudHeal.Repairs.LoadBalancers.IsEnabled()
}

type stuckLB struct {
	rec v1alpha1.StuckLoadBalancer
	lb  openstack.LoadBalancer
	svc corev1.ObjectReference
	why string
	due bool // past the timeout
}

type lbConvergeFinding struct {
	LBConvergence
	services  int
	stuck     []stuckLB
	converged []v1alpha1.StuckLoadBalancer // reported before, converged now
}

// Detect implements pass.Repair.
func (r LBConvergence) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	st := in.Read
	timeout := in.Cluster.Spec.Controllers.CloudHeal.Repairs.LoadBalancers.TimeoutOrDefault()
	f := &lbConvergeFinding{LBConvergence: r, services: len(st.LBServices)}
	prev := map[string]v1alpha1.StuckLoadBalancer{}
	for _, p := range st.Prev.StuckLoadBalancers {
		prev[p.ID] = p
	}
	byID, byName := map[string]*openstack.LoadBalancer{}, map[string][]*openstack.LoadBalancer{}
	for i := range st.LoadBalancers {
		lb := &st.LoadBalancers[i]
		if st.SubnetID != "" && lb.VIPSubnetID != st.SubnetID {
			continue // not on the cluster's subnet: not the cluster's
		}
		byID[lb.ID] = lb
		byName[lb.Name] = append(byName[lb.Name], lb)
	}
	seen := map[string]bool{}
	for i := range st.LBServices {
		svc := &st.LBServices[i]
		var lb *openstack.LoadBalancer
		if id := svc.Annotations[ccm.AnnotationLoadBalancerID]; id != "" {
			lb = byID[id]
		} else if ls := byName[ccm.LoadBalancerName(st.Settings.ClusterName, svc.Namespace, svc.Name)]; len(ls) == 1 {
			lb = ls[0]
		}
		if lb == nil {
			continue
		}
		why := notConverged(lb, st.NodesReady)
		if why == "" {
			continue
		}
		seen[lb.ID] = true
		rec := v1alpha1.StuckLoadBalancer{ID: lb.ID, Service: svc.Namespace + "/" + svc.Name, FirstSeen: metav1.NewTime(in.Now)}
		if p, ok := prev[lb.ID]; ok && p.Service == rec.Service {
			rec.FirstSeen, rec.Reported = p.FirstSeen, p.Reported
		}
		f.stuck = append(f.stuck, stuckLB{rec: rec, lb: *lb, why: why, due: in.Now.Sub(rec.FirstSeen.Time) >= timeout,
			svc: corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID}})
	}
	for _, p := range st.Prev.StuckLoadBalancers {
		if !seen[p.ID] && p.Reported {
			f.converged = append(f.converged, p)
		}
	}
	return f
}

// Unhealthy implements pass.Finding: none for the storm rule (this repair changes nothing in the cloud).
func (f *lbConvergeFinding) Unhealthy() []string { return nil }

// Repair implements pass.Finding: the condition, the metric and, once per sighting, the Service's Events.
func (f *lbConvergeFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	key := client.ObjectKeyFromObject(env.Cluster).String()
	var keep []v1alpha1.StuckLoadBalancer
	var due []string
	for _, s := range f.stuck {
		if s.due {
			msg := fmt.Sprintf("load balancer %s of Service %s: %s since %s; %s", s.lb.ID, s.rec.Service, s.why,
				s.rec.FirstSeen.UTC().Format(time.RFC3339), adminFix(&s.lb))
			due = append(due, msg)
			if !s.rec.Reported {
				env.Warn(ReasonLBNotConverged, "Report", msg)
				if f.serviceEvent(ctx, env, s.svc, corev1.EventTypeWarning, ReasonLBNotConverged, msg) {
					s.rec.Reported = true
				}
			}
		}
		keep = append(keep, s.rec)
	}
	for _, p := range f.converged {
		ns, name, _ := strings.Cut(p.Service, "/")
		ref := corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name}
		note := "load balancer " + p.ID + " of Service " + p.Service + " converged"
		env.Event(corev1.EventTypeNormal, ReasonLBConverged, "Report", note)
		f.serviceEvent(ctx, env, ref, corev1.EventTypeNormal, ReasonLBConverged, note)
	}
	env.Read.Status.StuckLoadBalancers = keep
	f.m.LBNotConverged.WithLabelValues(key).Set(float64(len(due)))
	if len(due) > 0 {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonNotConverged,
			Message: fmt.Sprintf("%d LoadBalancer Services, %d load balancers not converging past their timeout: %s", f.services, len(due), strings.Join(due, "; "))}}
	}
	return []pass.Report{{Status: metav1.ConditionTrue, Reason: ReasonConverged,
		Message: fmt.Sprintf("%d LoadBalancer Services, %d load balancers converging within their timeout", f.services, len(f.stuck))}}
}

// serviceEvent records an Event on a Service of the workload cluster, a safe write asked of the policy
// (pauses, dry-run and the pass's cap apply); it reports whether the Event was written.
func (f *lbConvergeFinding) serviceEvent(ctx context.Context, env *pass.Env[*State], ref corev1.ObjectReference, typ, reason, note string) bool {
	a := remediation.Action{Verb: VerbWarnService, Kind: "service", ID: ref.Namespace + "/" + ref.Name, Class: remediation.Safe}
	outcome, _, _ := env.Act(ctx, a, func(ctx context.Context) error {
		return workloadEvent(ctx, env.Workload.Client(), ref, typ, reason, note, env.Now)
	})
	return outcome == pass.OutcomeDone
}

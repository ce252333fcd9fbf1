package deorbit

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
)

// giveUp looks at the cloud one last time and writes the debris report: every cloud resource of the
// cluster still there (or, without a verified cloud, that nothing could be checked).
func (s *step) giveUp(ctx context.Context) {
	st := s.st
	if cloud := s.in.Cloud; cloud != nil {
		// A last sweep without deletes: new finds are tracked, tracked ones confirmed.
		var check []*v1alpha1.DeorbitResource
		if vols, err := cloud.ListVolumes(ctx, listAll); err == nil {
			for i := range vols {
				if ccm.OwnsVolume(s.in.Target.ClusterName, &vols[i]) {
					s.track(v1alpha1.DeorbitVolume, vols[i].ID, vols[i].Name, v1alpha1.DeorbitPending)
				}
			}
		} else {
			s.fail(fmt.Errorf("list volumes: %w", err))
		}
		if lbs, err := cloud.ListLoadBalancers(ctx, listAll); err == nil {
			for i := range lbs {
				if ccm.OwnsLoadBalancer(s.in.Target.ClusterName, s.in.Target.SubnetID, &lbs[i]) {
					s.track(v1alpha1.DeorbitLoadBalancer, lbs[i].ID, lbs[i].Name, v1alpha1.DeorbitPending)
					s.trackVIPPort(&lbs[i])
				}
			}
			// The ports and floating IPs, confirmed (never deleted: the network's deletions are dropped).
			_, _ = s.network(ctx, cloud, lbs)
		} else {
			s.fail(fmt.Errorf("list load balancers: %w", err))
		}
		for i := range st.Resources {
			r := &st.Resources[i]
			if (r.Type == v1alpha1.DeorbitVolume || r.Type == v1alpha1.DeorbitLoadBalancer) && r.ID != "" && r.State != v1alpha1.DeorbitGone && r.State != v1alpha1.DeorbitKept {
				check = append(check, r)
			}
		}
		s.refresh(ctx, cloud, check)
	}
	s.capResources() // the report is made of what the list keeps: within its cap too
	st.Debris = nil
	st.NotProven = notProven(st.Resources)
	for _, r := range st.Resources {
		if !cloudType(r.Type) {
			continue
		}
		if r.State == v1alpha1.DeorbitGone || r.State == v1alpha1.DeorbitKept || r.State == v1alpha1.DeorbitUnproven {
			continue // gone, kept, or not proven the cluster's (status.deorbit.notProven): not debris
		}
		d := r
		d.NextAttempt = nil
		if d.LastError == "" {
			d.LastError = fmt.Sprintf("still %s when deorbit gave up", stateWord(r.State))
		}
		st.Debris = append(st.Debris, d)
	}
	if s.in.Cloud == nil {
		if len(st.Debris) >= v1alpha1.MaxDeorbitResources {
			st.Debris = st.Debris[:v1alpha1.MaxDeorbitResources-1] // room for the entry that says nothing was checked
		}
		why := "no verified cloud"
		if s.in.CloudErr != nil {
			why = s.in.CloudErr.Error()
		}
		st.Debris = append(st.Debris, v1alpha1.DeorbitResource{Type: v1alpha1.DeorbitCloud, State: v1alpha1.DeorbitUnproven, Status: "Unverified",
			LastError: "the cloud could not be verified, nothing could be checked: " + why})
	}
	s.setPhase(v1alpha1.DeorbitPhaseGaveUp)
	st.CompletionTime = &metav1.Time{Time: s.now}
	s.e.Metrics.gaveUp(st.Debris)
}

// notProven are the cloud resources of rs never proven the cluster's: "not proven ours, never touched", apart
// from the debris, the debris metric and its alert.
func notProven(rs []v1alpha1.DeorbitResource) []v1alpha1.DeorbitResource {
	var out []v1alpha1.DeorbitResource
	for _, r := range rs {
		if cloudType(r.Type) && r.State == v1alpha1.DeorbitUnproven {
			r.NextAttempt = nil
			out = append(out, r)
		}
	}
	return out
}

func stateWord(state string) string {
	switch state {
	case v1alpha1.DeorbitDeleting:
		return "being deleted"
	case v1alpha1.DeorbitUnproven:
		return "there and not proven the cluster's"
	case v1alpha1.DeorbitWouldDelete:
		return "there (dry run)"
	}
	return "there"
}

func timePtr(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

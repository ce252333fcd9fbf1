// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

// ReasonStepConfirmed: a step recorded as started, whose answer the operator never saw (it stopped in between),
// was found in Nova's instance-action log: it was sent, and counts as taken at its record's time.
const ReasonStepConfirmed = "StepConfirmed"

// ReasonStepNotSent: a step recorded as started was not in Nova's instance-action log: it never left, and is
// taken now (once).
const ReasonStepNotSent = "StepNotSent"

// actionLister reads a server's instance-action log (tenancy's scoped cloud).
type actionLister interface {
	ListServerActions(ctx context.Context, id string) ([]openstack.ServerAction, error)
}

// reboots counts the reboots in the instance-action log of server id.
func reboots(ctx context.Context, cloud actionLister, id string) (int32, error) {
	acts, err := cloud.ListServerActions(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("read the instance actions of server %s: %w", id, err)
	}
	var n int32
	for _, a := range acts {
		if a.Action == "reboot" {
			n++
		}
	}
	return n, nil
}

// confirm tells, for a step recorded as started and not known as taken, whether it was sent: Nova's log of the
// server holds more reboots than when the step was recorded. A record of an operator that did not count
// (status.rebootsBefore unset) counts as sent, as before: a step is never sent twice. ok is false when the log
// cannot be read: nothing is decided, and the step is looked at again later.
func (r *Reconciler) confirm(ctx context.Context, s *run) (sent bool, after time.Duration, ok bool) {
	if s.st.RebootsBefore == nil || s.st.Server == "" {
		return true, 0, true
	}
	if after, ok := r.loadCluster(ctx, s); !ok {
		return false, after, false
	}
	step := stepOf(s.st.Phase)
	scope, err := r.d.Tenancy.Resolve(ctx, s.cluster)
	if err != nil {
		return false, r.hold(s, ReasonCloudUnverified, fmt.Sprintf("the %s reboot of server %s was recorded as started and its answer not seen; whether it was sent is not known without the credentials of VitalsCluster %s/%s: %v",
			step, s.st.Server, s.cluster.Namespace, s.cluster.Name, err), time.Time{}), false
	}
	n, err := reboots(ctx, scope.Cloud, s.st.Server)
	if err != nil {
		return false, r.hold(s, ReasonReadFailed, fmt.Sprintf("the %s reboot of server %s was recorded as started and its answer not seen; whether it was sent is not known: %v", step, s.st.Server, err), time.Time{}), false
	}
	before := *s.st.RebootsBefore
	if n > before {
		taken := v1alpha1.RemediationSoftRebooted
		if s.st.Phase == v1alpha1.RemediationHardRebootStarted {
			taken = v1alpha1.RemediationHardRebooted
		}
		s.st.Phase = taken
		r.note(s, corev1.EventTypeNormal, ReasonStepConfirmed, fmt.Sprintf("the %s reboot of server %s, recorded as started at %s, is in Nova's instance-action log (%d reboots, %d before): it was sent, and counts as taken then",
			step, s.st.Server, s.st.LastStepTime.UTC().Format(time.RFC3339), n, before))
		return true, 0, true
	}
	r.note(s, corev1.EventTypeWarning, ReasonStepNotSent, fmt.Sprintf("the %s reboot of server %s, recorded as started at %s, is not in Nova's instance-action log (%d reboots, as before): it never left, and is taken now",
		step, s.st.Server, s.st.LastStepTime.UTC().Format(time.RFC3339), n))
	return false, 0, true
}

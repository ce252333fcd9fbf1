package access

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// cloudResult is one resolution of a cluster's tenancy, ready to be written into its status.
type cloudResult struct {
	project string // proven project; "" when refused
	keep    bool   // nothing proven either way (cloud unavailable): keep the last proven project
	reason  string
	message string
	scope   *tenancy.Scope // the proven scope; nil when refused
}

func (cr cloudResult) apply(o *pass.Owned) {
	switch {
	case cr.project != "":
		o.Status.ProjectID = cr.project
	case !cr.keep:
		o.Status.ProjectID = ""
	}
	status := metav1.ConditionFalse
	if cr.reason == tenancy.ReasonVerified {
		status = metav1.ConditionTrue
	}
	o.Conditions = append(o.Conditions, metav1.Condition{Type: v1alpha1.ConditionCloudVerified, Status: status, Reason: cr.reason, Message: cr.message})
}

// result is the proof's result as a pass's metrics count it: ok when the cloud was verified, aborted when
// it could not be asked (nothing proven either way), error when tenancy refused the cluster.
func (cr cloudResult) result() string {
	switch {
	case cr.reason == tenancy.ReasonVerified:
		return pass.ResultOK
	case cr.keep:
		return pass.ResultAborted
	default:
		return pass.ResultError
	}
}

// verifyCloud resolves c's tenancy, sets the cloud check and records an Event when the result changed.
func (r *Reconciler) verifyCloud(ctx context.Context, c *v1alpha1.VitalsCluster) cloudResult {
	key := client.ObjectKeyFromObject(c)
	res := cloudResult{}
	scope, err := r.d.Tenancy.Resolve(ctx, c)
	if err == nil {
		res.project, res.reason, res.scope = scope.ProjectID, tenancy.ReasonVerified, scope
		res.message = "project " + scope.ProjectID + " proven with " + scope.Source
	} else {
		var refusal *tenancy.Refusal
		if !errors.As(err, &refusal) {
			// The cloud's errors are classified where they enter package openstack; Describe keeps it so
			// for any error that reached here another way.
			refusal = &tenancy.Refusal{Reason: tenancy.ReasonCloudUnavailable, Message: openstack.Describe(err)}
		}
		res.reason, res.message = refusal.Reason, refusal.Message
		res.keep = refusal.Reason == tenancy.ReasonCloudUnavailable
	}
	if r.d.Checks != nil {
		r.d.Checks.Set(key, remediation.CheckCloud, err)
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCloudVerified)
	if prev == nil || prev.Reason != res.reason || prev.Message != res.message {
		typ := corev1.EventTypeWarning
		if res.reason == tenancy.ReasonVerified {
			typ = corev1.EventTypeNormal
		}
		r.event(c, typ, res.reason, "VerifyCloud", res.message)
		logf.FromContext(ctx).Info("cloud verification changed", "reason", res.reason, "message", res.message)
	}
	return res
}

package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/tenancy"
)

// checkWorkloadCredentials is the name of the check of the workload cluster's consumer Secrets.
const checkWorkloadCredentials = "workload-credentials"

// workloadCredentials checks, as the access controller does, the workload cluster's consumer Secrets
// (spec.workloadCredentials: the cloud controller manager's and Cinder CSI's cloud-config): each one's
// credentials against the Keystone the cluster's own proved, and their expiry within the warning window. ok when
// every Secret found is good, a warning for an expiry within the window or not known and for a Secret the
// operator may not read, failed for credentials that are refused or expired (access's
// WorkloadCredentialsHealthy verdict); skipped with no Secret to check. Never a Secret's contents.
func workloadCredentials(ctx context.Context, vc *v1alpha1.VitalsCluster, ks *tenancy.Keystone, cl client.Reader, now time.Time, window time.Duration,
	add func(check, result, detail, reason string)) {
	if len(vc.Spec.WorkloadCredentials.Checked()) == 0 {
		add(checkWorkloadCredentials, "skipped", "spec.workloadCredentials checks no Secret", "")
		return
	}
	if ks == nil {
		add(checkWorkloadCredentials, "skipped", "the cluster's own credentials are not proven: the Keystone the workload Secrets must use is not known", "")
		return
	}
	entries, cond := access.CheckWorkloadSecrets(ctx, vc, ks, cl, now, window)
	if cond == nil {
		add(checkWorkloadCredentials, "skipped", "spec.workloadCredentials checks no Secret", "")
		return
	}
	var found []string
	for _, e := range entries {
		if e.Reason != access.ReasonNotFound {
			found = append(found, e.Secret+": "+e.Reason)
		}
	}
	switch cond.Status {
	case metav1.ConditionTrue:
		add(checkWorkloadCredentials, "ok", fmt.Sprintf("%d workload secrets authenticate against the cluster's Keystone (%s)", len(found), strings.Join(found, ", ")), "")
	case metav1.ConditionFalse:
		if cond.Reason == access.ReasonExpiringSoon {
			// as the cluster's own credentials check: a warning until they have expired
			add(checkWorkloadCredentials, "warning", cond.Message, cond.Reason)
			return
		}
		add(checkWorkloadCredentials, "failed", cond.Message, cond.Reason)
	default:
		if cond.Reason == access.ReasonNotFound {
			add(checkWorkloadCredentials, "skipped", cond.Message, cond.Reason)
			return
		}
		add(checkWorkloadCredentials, "warning", cond.Message, cond.Reason)
	}
}

package cli

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// credentialsExpiry reads, as the access controller does, when the cluster's credentials expire: ok when they do
// not or expire after the warning window, a warning within it or when the expiry cannot be read, failed once
// it has passed (access.Judge's verdict; never the credential itself).
func credentialsExpiry(ctx context.Context, scope *tenancy.Scope, now time.Time, window time.Duration, add func(check, result, detail, reason string)) {
	const check = "credentials"
	if scope.Credentials == nil {
		add(check, "skipped", "the connection cannot tell when its credentials expire", "")
		return
	}
	cr, err := scope.Credentials.Credential(ctx)
	if err != nil {
		add(check, "warning", "the credentials of "+scope.Source+" authenticate; when they expire could not be read: "+openstack.Describe(err), access.ReasonExpiryUnknown)
		return
	}
	status, reason, msg := access.Judge(cr, scope.Source, now, window)
	switch {
	case status == metav1.ConditionTrue:
		add(check, "ok", msg, "")
	case reason == access.ReasonExpired:
		add(check, "failed", msg, reason)
	default:
		add(check, "warning", msg, reason)
	}
}

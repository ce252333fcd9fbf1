package access

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// DefaultExpiryWarning is how long before its credentials expire a cluster's CredentialsHealthy turns False.
const DefaultExpiryWarning = 14 * 24 * time.Hour

// Reasons of the CredentialsHealthy condition (besides the CloudVerified reasons MissingCredentials,
// UntrustedNamespace and InvalidCredentials, which it takes over).
const (
	// ReasonNoExpiry: the credentials authenticate and do not expire.
	ReasonNoExpiry = "NoExpiry"
	// ReasonValid: the credentials authenticate and expire after the warning window.
	ReasonValid = "Valid"
	// ReasonExpiringSoon: the credentials expire within the warning window.
	ReasonExpiringSoon = "ExpiringSoon"
	// ReasonExpired: the credentials' expiry has passed (Keystone refuses them from then on).
	ReasonExpired = "Expired"
	// ReasonExpiryUnknown: the credentials authenticate, but when they expire could not be read.
	ReasonExpiryUnknown = "ExpiryUnknown"
)

// CredentialExpiryMetric is the unix time a cluster's credentials expire.
const CredentialExpiryMetric = "vitals_credentials_expiry_timestamp_seconds"

// CredentialMetrics export when each cluster's credentials expire.
type CredentialMetrics struct {
	// Expiry is vitals_credentials_expiry_timestamp_seconds{vitalscluster}: set while the credentials
	// expire, absent for credentials that do not (and for a cluster that is gone).
	Expiry *prometheus.GaugeVec
	// WorkloadExpiry is vitals_workload_credentials_expiry_timestamp_seconds{vitalscluster, secret}: the same
	// for each consumer Secret of the workload cluster (secret "kube-system/NAME key KEY"). A metric of its own,
	// so that Expiry's series keep their labels.
	WorkloadExpiry *prometheus.GaugeVec
}

// NewCredentialMetrics returns the metrics, registered with reg (nil: not registered).
func NewCredentialMetrics(reg prometheus.Registerer) *CredentialMetrics {
	m := &CredentialMetrics{Expiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: CredentialExpiryMetric,
		Help: "Unix time the VitalsCluster's OpenStack credentials expire (an application credential's expires_at, a password's password_expires_at, a bare token's expiry); absent when they do not expire.",
	}, []string{"vitalscluster"}),
		WorkloadExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: WorkloadCredentialExpiryMetric,
			Help: "Unix time the OpenStack credentials of a consumer Secret of the VitalsCluster's workload cluster (the cloud controller manager's, Cinder CSI's) expire; absent when they do not, or when it is not known.",
		}, []string{"vitalscluster", "secret"})}
	if reg != nil {
		reg.MustRegister(m.Expiry, m.WorkloadExpiry)
	}
	return m
}

func (m *CredentialMetrics) forget(key types.NamespacedName) {
	m.Expiry.DeleteLabelValues(key.String())
}

func (m *CredentialMetrics) forgetWorkload(key types.NamespacedName) {
	m.WorkloadExpiry.DeletePartialMatch(prometheus.Labels{"vitalscluster": key.String()})
}

// credentialResult is what the last proof showed of a cluster's credentials, ready to be written.
type credentialResult struct {
	cond   *metav1.Condition           // nil: none (the connection cannot tell)
	status *v1alpha1.CredentialsStatus // the new block (nil: none)
	keep   bool                        // keep the cluster's condition and block: nothing was learned
}

func (cr credentialResult) apply(o *pass.Owned, c *v1alpha1.VitalsCluster) {
	if cr.keep {
		if prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCredentialsHealthy); prev != nil {
			o.Conditions = append(o.Conditions, metav1.Condition{Type: prev.Type, Status: prev.Status, Reason: prev.Reason, Message: prev.Message})
		}
		if c.Status.Access != nil && c.Status.Access.Credentials != nil {
			o.Status.Access.Credentials = c.Status.Access.Credentials.DeepCopy()
		}
		return
	}
	if cr.cond != nil {
		o.Conditions = append(o.Conditions, *cr.cond)
	}
	o.Status.Access.Credentials = cr.status
}

// checkCredentials reads when the proven credentials of c expire and judges them against the warning
// window. It never reads or shows a credential itself: Keystone answers with the expiry of the credential the
// connection's token was obtained with.
func (r *Reconciler) checkCredentials(ctx context.Context, c *v1alpha1.VitalsCluster, cloud cloudResult) credentialResult {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	var res credentialResult
	switch {
	case cloud.scope != nil:
		res = r.judge(ctx, c, cloud.scope)
	case cloud.reason == tenancy.ReasonMissingCredentials || cloud.reason == tenancy.ReasonUntrustedNamespace || cloud.reason == tenancy.ReasonInvalidCredentials:
		res.cond = &metav1.Condition{Type: v1alpha1.ConditionCredentialsHealthy, Status: metav1.ConditionFalse, Reason: cloud.reason,
			Message: "the credentials do not authenticate: see CloudVerified"}
		if cloud.reason == tenancy.ReasonInvalidCredentials && c.Status.Access != nil {
			// Keystone refuses them: the expiry last seen says whether that is why.
			res.status = c.Status.Access.Credentials.DeepCopy()
			if st := res.status; st != nil && st.ExpiresAt != nil && !r.d.Clock.Now().Before(st.ExpiresAt.Time) {
				res.cond.Message += fmt.Sprintf("; the credentials last proven (secret version %s) expired at %s", st.SecretResourceVersion, st.ExpiresAt.UTC().Format(time.RFC3339))
			}
		}
	default:
		// The cloud could not be asked, or the spec was refused for another reason: nothing new is known of
		// the credentials.
		return credentialResult{keep: true}
	}
	if res.cond == nil {
		r.o.Credentials.forget(key)
		return res
	}
	if res.status != nil && res.status.ExpiresAt != nil {
		r.o.Credentials.Expiry.WithLabelValues(key.String()).Set(float64(res.status.ExpiresAt.Unix()))
	} else {
		r.o.Credentials.forget(key)
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCredentialsHealthy)
	if prev == nil || prev.Reason != res.cond.Reason || prev.Message != res.cond.Message {
		typ := corev1.EventTypeNormal
		if res.cond.Status != metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		r.event(c, typ, res.cond.Reason, "CheckCredentials", res.cond.Message)
		logf.FromContext(ctx).Info("credentials health changed", "reason", res.cond.Reason, "message", res.cond.Message)
	}
	return res
}

// judge reads the expiry of scope's credentials.
func (r *Reconciler) judge(ctx context.Context, c *v1alpha1.VitalsCluster, scope *tenancy.Scope) credentialResult {
	cond := &metav1.Condition{Type: v1alpha1.ConditionCredentialsHealthy}
	if scope.Credentials == nil {
		return credentialResult{} // a connection that cannot tell (an embedder's): no condition
	}
	cr, err := scope.Credentials.Credential(ctx)
	if err != nil {
		// Classified where it entered package openstack: it quotes nothing the cloud said.
		cond.Status, cond.Reason = metav1.ConditionUnknown, ReasonExpiryUnknown
		cond.Message = "the credentials of " + scope.Source + " authenticate; when they expire could not be read: " + openstack.Describe(err)
		var st *v1alpha1.CredentialsStatus
		if c.Status.Access != nil {
			st = c.Status.Access.Credentials.DeepCopy()
		}
		return credentialResult{cond: cond, status: st}
	}
	st := &v1alpha1.CredentialsStatus{Kind: string(cr.Kind), Source: scope.Source, SecretResourceVersion: scope.SecretVersion}
	switch prev := c.Status.Access; {
	case scope.SecretVersion != "" && prev != nil && prev.Credentials != nil && prev.Credentials.Source == scope.Source &&
		prev.Credentials.SecretResourceVersion == scope.SecretVersion && prev.Credentials.AuthenticatedSince != nil:
		// The same version of the same Secret: first authenticated then, also by an operator since restarted.
		st.AuthenticatedSince = prev.Credentials.AuthenticatedSince.DeepCopy()
	case !scope.ConnectedAt.IsZero():
		st.AuthenticatedSince = &metav1.Time{Time: scope.ConnectedAt.UTC().Truncate(time.Second)}
	}
	if !cr.ExpiresAt.IsZero() {
		st.ExpiresAt = &metav1.Time{Time: cr.ExpiresAt.UTC().Truncate(time.Second)}
	}
	cond.Status, cond.Reason, cond.Message = Judge(cr, scope.Source, r.d.Clock.Now(), r.o.ExpiryWarning)
	return credentialResult{cond: cond, status: st}
}

// Judge is the verdict on credentials cr of source at now, with the warning window: CredentialsHealthy's
// status, reason and message (vitals doctor's credentials check gives the same). The message names the expiry's
// time, never the time left: a message that changed at every proof would cost a status write each minute per
// cluster.
func Judge(cr openstack.Credential, source string, now time.Time, window time.Duration) (metav1.ConditionStatus, string, string) {
	what := credentialNoun(cr.Kind) + " of " + source
	if cr.ExpiresAt.IsZero() {
		return metav1.ConditionTrue, ReasonNoExpiry, "the " + what + " authenticates and does not expire"
	}
	at := cr.ExpiresAt.UTC().Truncate(time.Second)
	stamp := at.Format(time.RFC3339)
	switch {
	case !now.Before(at):
		return metav1.ConditionFalse, ReasonExpired, fmt.Sprintf("the %s expired at %s: Keystone refuses it from then on; put a new one in the Secret", what, stamp)
	case at.Sub(now) <= window:
		return metav1.ConditionFalse, ReasonExpiringSoon, fmt.Sprintf("the %s expires at %s, within %s: put a new one in the Secret before then", what, stamp, days(window))
	}
	return metav1.ConditionTrue, ReasonValid, fmt.Sprintf("the %s authenticates and expires at %s, after the %s warning window", what, stamp, days(window))
}

func credentialNoun(k openstack.CredentialKind) string {
	switch k {
	case openstack.CredentialApplication:
		return "application credential"
	case openstack.CredentialToken:
		return "token"
	}
	return "password"
}

// days writes d in days when it is a whole number of them ("14d"), else as a duration.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

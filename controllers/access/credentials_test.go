package access

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// credentials answers what the test says.
type credentials struct {
	cr  openstack.Credential
	err error
}

func (c credentials) Credential(context.Context) (openstack.Credential, error) { return c.cr, c.err }

// TestCheckCredentials: the CredentialsHealthy condition, status.access.credentials and the expiry metric for
// each kind of credential and each distance to its expiry; a refusal of the credentials turns it False, a cloud
// that cannot be asked keeps what was known; a message never names the time left (it would change at every
// proof, and every change is a status write).
func TestCheckCredentials(t *testing.T) {
	now := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	const source = "secret ns/creds key clouds.yaml (cloud openstack)"
	expiring := func(kind openstack.CredentialKind, in time.Duration) tenancy.CredentialReader {
		return credentials{cr: openstack.Credential{Kind: kind, ExpiresAt: now.Add(in)}}
	}
	prevStatus := &v1alpha1.CredentialsStatus{Kind: "ApplicationCredential", Source: source, ExpiresAt: &metav1.Time{Time: now.Add(-time.Hour)}}
	tests := []struct {
		name        string
		cloud       cloudResult
		prev        *metav1.Condition
		wantReason  string // "": no condition
		wantStatus  metav1.ConditionStatus
		wantExpiry  bool // status.access.credentials.expiresAt and the metric set
		wantEvent   bool
		wantMessage string
	}{
		{name: "an application credential that does not expire",
			cloud:      verified(credentials{cr: openstack.Credential{Kind: openstack.CredentialApplication}}),
			wantReason: ReasonNoExpiry, wantStatus: metav1.ConditionTrue, wantEvent: true, wantMessage: "does not expire"},
		{name: "expiring in 40 days",
			cloud:      verified(expiring(openstack.CredentialApplication, 40*24*time.Hour)),
			wantReason: ReasonValid, wantStatus: metav1.ConditionTrue, wantExpiry: true, wantEvent: true, wantMessage: "2027-01-12T06:00:00Z"},
		{name: "expiring in 3 days",
			cloud:      verified(expiring(openstack.CredentialApplication, 3*24*time.Hour)),
			wantReason: ReasonExpiringSoon, wantStatus: metav1.ConditionFalse, wantExpiry: true, wantEvent: true, wantMessage: "within 14d"},
		{name: "a password past its password_expires_at",
			cloud:      verified(expiring(openstack.CredentialPassword, -time.Minute)),
			wantReason: ReasonExpired, wantStatus: metav1.ConditionFalse, wantExpiry: true, wantEvent: true, wantMessage: "the password of"},
		{name: "the same verdict again: no Event",
			cloud:      verified(expiring(openstack.CredentialApplication, 3*24*time.Hour)),
			prev:       &metav1.Condition{Reason: ReasonExpiringSoon, Message: "the application credential of " + source + " expires at 2026-12-06T06:00:00Z, within 14d: put a new one in the Secret before then"},
			wantReason: ReasonExpiringSoon, wantStatus: metav1.ConditionFalse, wantExpiry: true},
		{name: "the expiry cannot be read: the one last seen stays",
			cloud:      verified(credentials{err: errors.New("read the application credential's expiry from Keystone: forbidden")}),
			wantReason: ReasonExpiryUnknown, wantStatus: metav1.ConditionUnknown, wantExpiry: true, wantEvent: true, wantMessage: "could not be read"},
		{name: "a connection that cannot tell: no condition",
			cloud: verified(nil)},
		{name: "refused by Keystone: the expiry last seen stays",
			cloud:      cloudResult{reason: tenancy.ReasonInvalidCredentials, message: "401"},
			wantReason: tenancy.ReasonInvalidCredentials, wantStatus: metav1.ConditionFalse, wantExpiry: true, wantEvent: true},
		{name: "refused by Keystone after the expiry last seen: the message says so",
			cloud:      cloudResult{reason: tenancy.ReasonInvalidCredentials, message: "401"},
			wantReason: tenancy.ReasonInvalidCredentials, wantStatus: metav1.ConditionFalse, wantExpiry: true, wantEvent: true,
			wantMessage: "expired at 2026-12-03T05:00:00Z"},
		{name: "no Secret: nothing known of the credentials",
			cloud:      cloudResult{reason: tenancy.ReasonMissingCredentials},
			wantReason: tenancy.ReasonMissingCredentials, wantStatus: metav1.ConditionFalse, wantEvent: true},
		{name: "the cloud cannot be asked: what was known stays",
			cloud:      cloudResult{reason: tenancy.ReasonCloudUnavailable, keep: true},
			prev:       &metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonExpired, Message: "expired"},
			wantReason: ReasonExpired, wantStatus: metav1.ConditionFalse, wantExpiry: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			reg := prometheus.NewRegistry()
			r := &Reconciler{d: &pass.Deps{Clock: clocktesting.NewFakeClock(now), Recorder: func(string) events.EventRecorder { return rec }},
				o: Options{ExpiryWarning: DefaultExpiryWarning, Credentials: NewCredentialMetrics(reg)}}
			c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
			c.Status.Access = &v1alpha1.AccessStatus{Credentials: prevStatus.DeepCopy()}
			if tc.prev != nil {
				p := *tc.prev
				p.Type = v1alpha1.ConditionCredentialsHealthy
				c.Status.Conditions = []metav1.Condition{p}
			}
			res := r.checkCredentials(context.Background(), c, tc.cloud)
			own := pass.Owned{Status: v1alpha1.ClusterStatus{Access: &v1alpha1.AccessStatus{}}}
			res.apply(&own, c)
			switch {
			case tc.wantReason == "" && len(own.Conditions) != 0:
				t.Fatalf("conditions %+v, want none", own.Conditions)
			case tc.wantReason == "":
			case len(own.Conditions) != 1:
				t.Fatalf("conditions %+v, want one", own.Conditions)
			default:
				cd := own.Conditions[0]
				if cd.Type != v1alpha1.ConditionCredentialsHealthy || cd.Reason != tc.wantReason || cd.Status != tc.wantStatus || !strings.Contains(cd.Message, tc.wantMessage) {
					t.Errorf("condition %+v, want %s/%s with %q", cd, tc.wantStatus, tc.wantReason, tc.wantMessage)
				}
				if strings.Contains(cd.Message, "in 3d") || strings.Contains(cd.Message, "72h") {
					t.Errorf("message %q names the time left", cd.Message)
				}
			}
			st := own.Status.Access.Credentials
			if got := st != nil && st.ExpiresAt != nil; got != tc.wantExpiry {
				t.Errorf("status.access.credentials %+v: expiresAt set %v, want %v", st, got, tc.wantExpiry)
			}
			if !tc.cloud.keep {
				if got := testutil.CollectAndCount(r.o.Credentials.Expiry); got != map[bool]int{true: 1}[tc.wantExpiry] {
					t.Errorf("%d expiry series, want %v", got, tc.wantExpiry)
				}
			}
			if got := len(rec.Events) == 1; got != tc.wantEvent {
				t.Errorf("%d Events, want one: %v", len(rec.Events), tc.wantEvent)
			}
		})
	}
}

func verified(cr tenancy.CredentialReader) cloudResult {
	return cloudResult{project: "p1", reason: tenancy.ReasonVerified, scope: &tenancy.Scope{ProjectID: "p1",
		Source: "secret ns/creds key clouds.yaml (cloud openstack)", Credentials: cr}}
}

// TestAuthenticatedSince: authenticatedSince is when this version of the Secret first authenticated; an
// operator restarted since (a new connection) keeps it, a new version of the Secret (a rotation) moves it.
func TestAuthenticatedSince(t *testing.T) {
	now := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	first := metav1.NewTime(now.Add(-time.Hour))
	tests := []struct {
		name, version string
		want          time.Time
	}{
		{"the same version, connected again", "41", first.Time},
		{"a new version", "42", now},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{d: &pass.Deps{Clock: clocktesting.NewFakeClock(now), Recorder: func(string) events.EventRecorder { return events.NewFakeRecorder(10) }},
				o: Options{ExpiryWarning: DefaultExpiryWarning, Credentials: NewCredentialMetrics(nil)}}
			c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
			cloud := verified(credentials{cr: openstack.Credential{Kind: openstack.CredentialApplication}})
			cloud.scope.ConnectedAt, cloud.scope.SecretVersion = now, tc.version
			c.Status.Access = &v1alpha1.AccessStatus{Credentials: &v1alpha1.CredentialsStatus{Kind: "ApplicationCredential",
				Source: cloud.scope.Source, SecretResourceVersion: "41", AuthenticatedSince: &first}}
			res := r.checkCredentials(context.Background(), c, cloud)
			if got := res.status.AuthenticatedSince; got == nil || !got.Time.Equal(tc.want) || res.status.SecretResourceVersion != tc.version {
				t.Fatalf("authenticatedSince %v (version %q), want %s (%q)", got, res.status.SecretResourceVersion, tc.want, tc.version)
			}
		})
	}
}

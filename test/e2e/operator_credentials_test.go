package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// appCredential is an application credential made in the real Keystone for the test cloud's user.
type appCredential struct {
	id, secret string
}

// newAppCredential creates an application credential of the fixture's user in its project, expiring at expires
// (zero: never), deleted in t.Cleanup.
func (f *tenancyFixture) newAppCredential(expires time.Time) appCredential {
	f.t.Helper()
	ctx := context.Background()
	ic, err := f.admin.Client(openstack.ServiceIdentity)
	if err != nil {
		f.t.Fatal(err)
	}
	var body struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if err := f.admin.Provider().GetAuthResult().(interface{ ExtractInto(any) error }).ExtractInto(&body); err != nil || body.User.ID == "" {
		f.t.Fatalf("the test user's ID from its token: %v", err)
	}
	opts := applicationcredentials.CreateOpts{Name: "vitals-e2e-" + opRandHex(4)}
	if !expires.IsZero() {
		opts.ExpiresAt = &expires
	}
	ac, err := applicationcredentials.Create(ctx, ic, body.User.ID, opts).Extract()
	if err != nil {
		f.t.Fatalf("create application credential: %v", err)
	}
	f.t.Cleanup(func() { _ = applicationcredentials.Delete(context.Background(), ic, body.User.ID, ac.ID).ExtractErr() })
	return appCredential{id: ac.ID, secret: ac.Secret}
}

// appCloudsYAML is a clouds.yaml that authenticates with an application credential.
func appCloudsYAML(authURL string, ac appCredential) string {
	return fmt.Sprintf(`clouds:
  openstack:
    auth_type: v3applicationcredential
    auth:
      auth_url: %s
      application_credential_id: %s
      application_credential_secret: %s
    region_name: RegionOne
`, authURL, ac.id, ac.secret)
}

// TestOperatorCredentialsExpiry: against the real Keystone, the access controller reads when a cluster's
// credentials expire. An application credential expiring in 3 days turns CredentialsHealthy False
// (ExpiringSoon: the alert VitalsCredentialsExpiring fires on it, chart_alerts) with the expiry in
// status.access.credentials and vitals_credentials_expiry_timestamp_seconds; the Secret rotated to one that
// does not expire turns it True (NoExpiry), with authenticatedSince the time the new one first authenticated
// and the metric gone; a wrong secret turns it False (InvalidCredentials); a password says Password. Neither
// credential's ID nor secret appears in the status, the Events or the logs.
func TestOperatorCredentialsExpiry(t *testing.T) {
	f := newTenancyFixture(t, false)
	ctx, cancel := context.WithTimeout(logf.IntoContext(context.Background(), f.log), 3*time.Minute)
	defer cancel()
	// Keystone keeps expires_at to the microsecond; the status to the second.
	expiring := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Second)
	soon := f.newAppCredential(expiring)
	lasting := f.newAppCredential(time.Time{})

	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "appcred"},
		StringData: map[string]string{"clouds.yaml": appCloudsYAML(f.env.AuthURL, soon)}}
	if err := f.c.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	key := f.cluster("appcred", func(cl *v1alpha1.VitalsCluster) {
		cl.Spec.OpenStack.CredentialsSecretRef = &v1alpha1.SecretKeyRef{Name: "appcred"}
	})
	pw := f.cluster("password", nil)

	clk := clocktesting.NewFakeClock(time.Now())
	rec := events.NewFakeRecorder(100)
	metrics := access.NewCredentialMetrics(prometheus.NewRegistry())
	v := f.verifier(nil)
	acc, err := access.New(&pass.Deps{Client: f.c, Tenancy: v, Recorder: func(string) events.EventRecorder { return rec }, Clock: clk},
		access.Options{Credentials: metrics})
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	prove := func(key client.ObjectKey) *v1alpha1.VitalsCluster {
		t.Helper()
		return accessPass(t, ctx, acc, f.c, key, rec, &evs)
	}
	healthy := func(cl *v1alpha1.VitalsCluster, status metav1.ConditionStatus, reason string) {
		t.Helper()
		cd := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionCredentialsHealthy)
		if cd == nil || cd.Status != status || cd.Reason != reason {
			t.Fatalf("CredentialsHealthy %+v, want %s/%s (CloudVerified %+v)", cd, status, reason,
				meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionCloudVerified))
		}
	}
	expiry := func() float64 {
		return testutil.ToFloat64(metrics.Expiry.WithLabelValues(key.String()))
	}

	cl := prove(key)
	healthy(cl, metav1.ConditionFalse, access.ReasonExpiringSoon)
	st := cl.Status.Access.Credentials
	if st == nil || st.Kind != string(openstack.CredentialApplication) || st.ExpiresAt == nil || !st.ExpiresAt.Time.Equal(expiring) || st.AuthenticatedSince == nil {
		t.Fatalf("status.access.credentials %+v, want an application credential expiring at %s", st, expiring)
	}
	if got := expiry(); got != float64(expiring.Unix()) {
		t.Errorf("%s %v, want %d", access.CredentialExpiryMetric, got, expiring.Unix())
	}
	if !hasEvent(evs, "Warning ExpiringSoon") {
		t.Errorf("no ExpiringSoon Warning in %q", evs)
	}
	first := st.AuthenticatedSince.Time

	// Rotated to a credential that does not expire.
	clk.Step(time.Minute)
	sec.StringData = map[string]string{"clouds.yaml": appCloudsYAML(f.env.AuthURL, lasting)}
	if err := f.c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	cl = prove(key)
	healthy(cl, metav1.ConditionTrue, access.ReasonNoExpiry)
	if st := cl.Status.Access.Credentials; st == nil || st.ExpiresAt != nil || st.AuthenticatedSince == nil || !st.AuthenticatedSince.After(first) {
		t.Fatalf("status.access.credentials %+v after the rotation, want no expiry and authenticatedSince after %s", st, first)
	}
	if n := testutil.CollectAndCount(metrics.Expiry); n != 0 {
		t.Errorf("%d expiry series for credentials that do not expire", n)
	}

	// Rotated to a wrong secret.
	wrong := appCredential{id: lasting.id, secret: "wrong-" + opRandHex(8)}
	sec.StringData = map[string]string{"clouds.yaml": appCloudsYAML(f.env.AuthURL, wrong)}
	if err := f.c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	cl = prove(key)
	healthy(cl, metav1.ConditionFalse, tenancy.ReasonInvalidCredentials)

	// The fixture's own Secret: a password, which the test cloud's policy does not expire.
	pcl := prove(pw)
	healthy(pcl, metav1.ConditionTrue, access.ReasonNoExpiry)
	if st := pcl.Status.Access.Credentials; st == nil || st.Kind != string(openstack.CredentialPassword) {
		t.Errorf("status.access.credentials %+v of a password", st)
	}

	// No credential text anywhere.
	for _, cl := range []*v1alpha1.VitalsCluster{cl, pcl} {
		f.mustNotLeak(cl, evs)
		status, _ := json.Marshal(cl.Status)
		for what, text := range map[string]string{"status": string(status), "events": strings.Join(evs, "\n"), "logs": f.logs.String()} {
			for _, s := range []string{soon.secret, lasting.secret, wrong.secret, soon.id, lasting.id, f.env.Password} {
				if strings.Contains(text, s) {
					t.Fatalf("a credential's ID or secret reached the %s", what)
				}
			}
		}
	}
}

// accessPass reconciles the access controller once for key, returns the VitalsCluster as written, and adds the
// Events it sent to evs.
func accessPass(t *testing.T, ctx context.Context, acc *access.Reconciler, c client.Client, key client.ObjectKey, rec *events.FakeRecorder, evs *[]string) *v1alpha1.VitalsCluster {
	t.Helper()
	if _, err := acc.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatalf("access reconcile: %v", err)
	}
	var cl v1alpha1.VitalsCluster
	if err := c.Get(ctx, key, &cl); err != nil {
		t.Fatal(err)
	}
	for more := true; more; {
		select {
		case e := <-rec.Events:
			*evs = append(*evs, e)
		default:
			more = false
		}
	}
	return &cl
}

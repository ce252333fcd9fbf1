package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// appCloudConf is a cloud controller manager's cloud.conf that authenticates with an application credential.
func appCloudConf(authURL string, ac appCredential) string {
	return fmt.Sprintf("[Global]\nauth-url = %s\napplication-credential-id = %s\napplication-credential-secret = %s\nregion = RegionOne\n\n[LoadBalancer]\nuse-octavia = true\n",
		authURL, ac.id, ac.secret)
}

// TestOperatorWorkloadCredentials: against the real Keystone and the real kube-apiserver as the workload cluster
// (reached only as deploy/manifests/workload-rbac.yaml's ServiceAccount), the access controller checks the
// workload cluster's consumer Secrets named in spec.workloadCredentials. A cloud.conf whose application credential
// expires in 3 days turns WorkloadCredentialsHealthy False (ExpiringSoon) with the expiry in
// status.access.workloadCredentials and vitals_workload_credentials_expiry_timestamp_seconds; a clouds.yaml whose
// credential does not expire is NoExpiry (its auth URL spelt without /v3: the same Keystone); a Secret naming
// another auth URL is OtherKeystone and never dialed; a missing one is NotFound; a steady state authenticates once
// per Secret version. Rotated to a credential that does not expire, the Secret's change is recorded (changeSeen)
// and the consumer pod that mounts it, created before (it never runs: no kubelet; judged by its creation), is named
// stale (ConsumersStale) until only a pod created since uses it (NoExpiry). A wrong secret is InvalidCredentials,
// saying Keystone refused it. A workload identity without get on kube-system's Secrets gets NotReadable ("not
// readable (forbidden)"), Unknown, and the proof goes on. No credential's ID or secret reaches the status, the
// Events or the logs.
func TestOperatorWorkloadCredentials(t *testing.T) {
	f := newTenancyFixture(t, false)
	ctx, cancel := context.WithTimeout(logf.IntoContext(context.Background(), f.log), 5*time.Minute)
	defer cancel()
	expiring := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Second)
	soon := f.newAppCredential(expiring)
	lasting := f.newAppCredential(time.Time{})
	wrong := appCredential{id: lasting.id, secret: "wrong-" + opRandHex(8)}

	// Another Keystone: it must never be asked anything.
	var dialed atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		dialed.Add(1)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(other.Close)

	// The workload cluster: the shared kube-apiserver, through the manifest's ServiceAccount.
	rb := wlRBAC(t, testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t)), "kube-system")
	sfx := opRandHex(4)
	ccm, csi, foreign := "cloud-config-"+sfx, "cinder-csi-cloud-config-"+sfx, "foreign-cloud-config-"+sfx
	const ks = v1alpha1.WorkloadCredentialsNamespace
	put := func(name string, data map[string]string) {
		t.Helper()
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ks, Name: name}}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(sec), sec); err == nil {
			sec.Data, sec.StringData = nil, data
			if err := f.c.Update(ctx, sec); err != nil {
				t.Fatal(err)
			}
			return
		}
		sec.StringData = data
		if err := f.c.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.c.Delete(context.Background(), sec) })
	}
	put(ccm, map[string]string{"cloud.conf": appCloudConf(f.env.AuthURL, soon)})
	put(csi, map[string]string{"clouds.yaml": appCloudsYAML(strings.TrimSuffix(f.env.AuthURL, "/v3"), lasting)})
	put(foreign, map[string]string{"cloud.conf": appCloudConf(other.URL+"/v3", lasting)})
	pod := func(name string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ks, Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ccm", Image: "registry.invalid/ccm:v1",
				VolumeMounts: []corev1.VolumeMount{{Name: "cloud-config", MountPath: "/etc/config"}}}},
				Volumes: []corev1.Volume{{Name: "cloud-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ccm}}}}}}
		if err := f.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.c.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		return p
	}
	oldPod := pod("ccm-old-" + sfx)

	key := f.cluster("wlcreds", func(cl *v1alpha1.VitalsCluster) {
		cl.Spec.WorkloadCredentials.Secrets = []v1alpha1.WorkloadCredentialsSecret{
			{Name: ccm, Consumer: "cloud controller manager"}, {Name: csi, Consumer: "Cinder CSI"},
			{Name: foreign, Consumer: "foreign"}, {Name: "missing-" + sfx},
		}
	})
	clk := clocktesting.NewFakeClock(time.Now())
	rec := events.NewFakeRecorder(1000)
	metrics := access.NewCredentialMetrics(prometheus.NewRegistry())
	wm, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: remediation.NewChecks(clk), AllowLocal: true, Local: rb.Config,
		HealthInterval: time.Second, HealthTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wm.Close)
	acc, err := access.New(&pass.Deps{Client: f.c, Tenancy: f.verifier(nil), Workload: wm, Recorder: func(string) events.EventRecorder { return rec }, Clock: clk},
		access.Options{Credentials: metrics})
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	prove := func() *v1alpha1.VitalsCluster {
		t.Helper()
		return accessPass(t, ctx, acc, f.c, key, rec, &evs)
	}
	cond := func(cl *v1alpha1.VitalsCluster) *metav1.Condition {
		return meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionWorkloadCredentialsHealthy)
	}
	healthy := func(cl *v1alpha1.VitalsCluster, status metav1.ConditionStatus, reason string) {
		t.Helper()
		if cd := cond(cl); cd == nil || cd.Status != status || cd.Reason != reason {
			t.Fatalf("WorkloadCredentialsHealthy %+v, want %s/%s (status %+v)", cd, status, reason, cl.Status.Access)
		}
	}
	entry := func(cl *v1alpha1.VitalsCluster, name string) v1alpha1.WorkloadCredentialStatus {
		t.Helper()
		for _, e := range cl.Status.Access.WorkloadCredentials {
			if strings.HasPrefix(e.Secret, ks+"/"+name) {
				return e
			}
		}
		t.Fatalf("no status.access.workloadCredentials entry for %s in %+v", name, cl.Status.Access.WorkloadCredentials)
		return v1alpha1.WorkloadCredentialStatus{}
	}
	authentications := func() int { return strings.Count(f.logs.String(), "workload credentials authenticated") }

	// The workload access connects in the background: the check waits for it (the condition keeps nothing before).
	var cl *v1alpha1.VitalsCluster
	opEventually(t, time.Minute, "WorkloadCredentialsHealthy written", func() (bool, string) {
		cl = prove()
		return cond(cl) != nil, fmt.Sprintf("conditions %+v", cl.Status.Conditions)
	})
	healthy(cl, metav1.ConditionFalse, access.ReasonExpiringSoon)
	e := entry(cl, ccm)
	if e.Reason != access.ReasonExpiringSoon || e.Kind != string(openstack.CredentialApplication) || e.ExpiresAt == nil || !e.ExpiresAt.Time.Equal(expiring) ||
		e.Secret != ks+"/"+ccm+" key cloud.conf" || e.ChangeSeen != nil || e.SecretResourceVersion == "" {
		t.Fatalf("the cloud controller manager's entry %+v, want an application credential expiring at %s", e, expiring)
	}
	if got := testutil.ToFloat64(metrics.WorkloadExpiry.WithLabelValues(key.String(), e.Secret)); got != float64(expiring.Unix()) {
		t.Errorf("%s %v, want %d", access.WorkloadCredentialExpiryMetric, got, expiring.Unix())
	}
	if e := entry(cl, csi); e.Reason != access.ReasonNoExpiry || e.ExpiresAt != nil {
		t.Errorf("Cinder CSI's entry %+v, want NoExpiry", e)
	}
	if e := entry(cl, foreign); e.Reason != tenancy.ReasonOtherKeystone || !strings.Contains(e.Message, "another cloud's Keystone") || !strings.Contains(e.Message, "not checked") {
		t.Errorf("the foreign entry %+v, want OtherKeystone, not checked", e)
	}
	if e := entry(cl, "missing-"+sfx); e.Reason != access.ReasonNotFound {
		t.Errorf("the missing entry %+v, want NotFound", e)
	}
	if !hasEvent(evs, "Warning WorkloadExpiringSoon") {
		t.Errorf("no WorkloadExpiringSoon Warning in %q", evs)
	}
	if n := authentications(); n != 2 {
		t.Errorf("%d authentications, want 2 (the foreign Secret is not dialed)", n)
	}

	// A steady state: no new authentication.
	cl = prove()
	healthy(cl, metav1.ConditionFalse, access.ReasonExpiringSoon)
	if n := authentications(); n != 2 {
		t.Errorf("%d authentications after a second proof, want still 2 (cached per Secret version)", n)
	}

	// The foreign Secret keeps the condition Unknown (not checked) and the missing one says nothing: from here on
	// the cluster names the consumers' Secrets only.
	var vc v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, key, &vc); err != nil {
		t.Fatal(err)
	}
	vc.Spec.WorkloadCredentials.Secrets = vc.Spec.WorkloadCredentials.Secrets[:2]
	if err := f.c.Update(ctx, &vc); err != nil {
		t.Fatal(err)
	}

	// Rotated to a credential that does not expire: the old pod still holds the old one.
	time.Sleep(1100 * time.Millisecond) // the change is seen a second after the old pod's creation at least
	clk.SetTime(time.Now())
	put(ccm, map[string]string{"cloud.conf": appCloudConf(f.env.AuthURL, lasting)})
	cl = prove()
	healthy(cl, metav1.ConditionFalse, access.ReasonConsumersStale)
	e = entry(cl, ccm)
	if e.Reason != access.ReasonConsumersStale || e.ExpiresAt != nil || e.ChangeSeen == nil || !slices.Equal(e.StaleConsumers, []string{oldPod.Name}) ||
		!strings.Contains(e.Message, "does not expire") {
		t.Fatalf("the entry after the rotation %+v, want no expiry, the change seen and %s stale", e, oldPod.Name)
	}
	seen := e.ChangeSeen.Time
	if n := testutil.CollectAndCount(metrics.WorkloadExpiry); n != 0 {
		t.Errorf("%d workload expiry series for credentials that do not expire", n)
	}

	// A pod created since: the old one is still stale while it exists, then the consumers have restarted.
	time.Sleep(1100 * time.Millisecond)
	pod("ccm-new-" + sfx)
	clk.Step(time.Minute)
	cl = prove()
	if e := entry(cl, ccm); !slices.Equal(e.StaleConsumers, []string{oldPod.Name}) || !e.ChangeSeen.Time.Equal(seen) {
		t.Fatalf("the entry with a new pod beside the old one %+v, want %s still stale, the change seen at %s", e, oldPod.Name, seen)
	}
	if err := f.c.Delete(ctx, oldPod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	opEventually(t, time.Minute, "the old pod gone", func() (bool, string) {
		err := f.c.Get(ctx, client.ObjectKeyFromObject(oldPod), &corev1.Pod{})
		return err != nil, fmt.Sprint(err)
	})
	cl = prove()
	healthy(cl, metav1.ConditionTrue, access.ReasonNoExpiry)
	if e := entry(cl, ccm); len(e.StaleConsumers) != 0 || !strings.Contains(e.Message, "started after its change") {
		t.Fatalf("the entry once the old pod is gone %+v", e)
	}

	// A wrong secret.
	put(csi, map[string]string{"clouds.yaml": appCloudsYAML(f.env.AuthURL, wrong)})
	cl = prove()
	healthy(cl, metav1.ConditionFalse, tenancy.ReasonInvalidCredentials)
	if e := entry(cl, csi); e.Reason != tenancy.ReasonInvalidCredentials || !strings.Contains(e.Message, "Keystone refused the credentials (401)") || e.ChangeSeen == nil {
		t.Fatalf("Cinder CSI's entry with a wrong secret %+v", e)
	}

	// A workload identity that may not read the Secrets: NotReadable, a report, not a failure of the proof.
	nobody := rest.CopyConfig(testenv.Kube(t))
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:vitals-nobody-" + sfx}
	wm2, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: remediation.NewChecks(clk), AllowLocal: true, Local: nobody,
		HealthInterval: time.Second, HealthTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wm2.Close)
	acc2, err := access.New(&pass.Deps{Client: f.c, Tenancy: f.verifier(nil), Workload: wm2, Recorder: func(string) events.EventRecorder { return rec }, Clock: clk},
		access.Options{Credentials: metrics})
	if err != nil {
		t.Fatal(err)
	}
	opEventually(t, time.Minute, "NotReadable", func() (bool, string) {
		if _, err := acc2.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("access reconcile as a workload identity without rights: %v", err)
		}
		var got v1alpha1.VitalsCluster
		if err := f.c.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		cl = &got
		cd := cond(cl)
		return cd != nil && cd.Reason == access.ReasonNotReadable, fmt.Sprintf("%+v", cd)
	})
	if e := entry(cl, ccm); e.Reason != access.ReasonNotReadable || !strings.Contains(e.Message, "not readable (forbidden)") || strings.Contains(e.Message, "vitals-nobody") {
		t.Errorf("the entry of a Secret the operator may not read %+v", e)
	}
	if cd := cond(cl); cd.Status != metav1.ConditionUnknown {
		t.Errorf("WorkloadCredentialsHealthy %+v, want Unknown", cd)
	}

	if n := dialed.Load(); n != 0 {
		t.Errorf("the other Keystone was asked %d times", n)
	}
	// No credential text anywhere.
	f.mustNotLeak(cl, evs)
	status, _ := json.Marshal(cl.Status)
	for what, text := range map[string]string{"status": string(status), "events": strings.Join(evs, "\n"), "logs": f.logs.String()} {
		for _, s := range []string{soon.secret, lasting.secret, wrong.secret, soon.id, lasting.id, f.env.Password} {
			if strings.Contains(text, s) {
				t.Fatalf("a credential's ID or secret reached the %s", what)
			}
		}
	}
	t.Logf("WorkloadCredentialsHealthy: %s", cond(cl).Message)
}

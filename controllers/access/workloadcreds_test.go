package access

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/tenancy"
)

// TestStaleConsumers: after a change of a Secret seen at a time, the pods that use it (a secret volume, a projected
// secret, an env secretKeyRef or envFrom) and started before it are stale; a pod is as old as its oldest container;
// one whose containers never started is judged by status.startTime, else its creation; pods going or finished and
// pods that do not use the Secret do not count.
func TestStaleConsumers(t *testing.T) {
	seen := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.Time{Time: seen.Add(d)} }
	vol := func(name string) corev1.PodSpec {
		return corev1.PodSpec{Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}}
	}
	env := corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Env: []corev1.EnvVar{{Name: "OS_PASSWORD", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-config"}, Key: "password"}}}}}}}
	envFrom := corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-config"}}}}}}}
	projected := corev1.PodSpec{Volumes: []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-config"}}}}}}}}}
	running := func(ds ...time.Duration) corev1.PodStatus {
		var st corev1.PodStatus
		for _, d := range ds {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(d)}}})
		}
		return st
	}
	pod := func(name string, created time.Duration, spec corev1.PodSpec, st corev1.PodStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created)}, Spec: spec, Status: st}
	}
	startTime := at(time.Minute)
	deleting := pod("deleting", -time.Hour, vol("cloud-config"), running(-time.Hour))
	deleting.DeletionTimestamp = &metav1.Time{Time: seen}
	tests := []struct {
		name      string
		pods      []corev1.Pod
		consumers int
		stale     []string
	}{
		{name: "none", pods: nil},
		{name: "restarted after", pods: []corev1.Pod{pod("ccm-new", -time.Hour, vol("cloud-config"), running(time.Minute))}, consumers: 1},
		{name: "running since before", pods: []corev1.Pod{pod("ccm-old", -time.Hour, vol("cloud-config"), running(-time.Hour))}, consumers: 1, stale: []string{"ccm-old"}},
		{name: "one container from before", pods: []corev1.Pod{pod("csi", -time.Hour, vol("cloud-config"), running(time.Minute, -time.Minute))}, consumers: 1, stale: []string{"csi"}},
		{name: "the same second", pods: []corev1.Pod{pod("same", -time.Hour, vol("cloud-config"), running(500*time.Millisecond))}, consumers: 1},
		{name: "never started, created before", pods: []corev1.Pod{pod("pending", -time.Minute, vol("cloud-config"), corev1.PodStatus{})}, consumers: 1, stale: []string{"pending"}},
		{name: "never started, created after", pods: []corev1.Pod{pod("pending", time.Minute, vol("cloud-config"), corev1.PodStatus{})}, consumers: 1},
		{name: "never started, accepted after", pods: []corev1.Pod{pod("accepted", -time.Minute, vol("cloud-config"), corev1.PodStatus{StartTime: &startTime})}, consumers: 1},
		{name: "env", pods: []corev1.Pod{pod("env", -time.Hour, env, running(-time.Hour))}, consumers: 1, stale: []string{"env"}},
		{name: "envFrom of an init container", pods: []corev1.Pod{pod("init", -time.Hour, envFrom, corev1.PodStatus{})}, consumers: 1, stale: []string{"init"}},
		{name: "projected", pods: []corev1.Pod{pod("proj", -time.Hour, projected, running(-time.Hour))}, consumers: 1, stale: []string{"proj"}},
		{name: "another Secret", pods: []corev1.Pod{pod("other", -time.Hour, vol("cinder-csi-cloud-config"), running(-time.Hour))}},
		{name: "going or finished", pods: []corev1.Pod{deleting, pod("done", -time.Hour, vol("cloud-config"), corev1.PodStatus{Phase: corev1.PodSucceeded})}},
		{name: "sorted", pods: []corev1.Pod{pod("b", -time.Hour, vol("cloud-config"), running(-time.Hour)), pod("a", -time.Hour, env, running(-time.Hour)), pod("c", -time.Hour, vol("cloud-config"), running(time.Hour))},
			consumers: 3, stale: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, stale, more := staleConsumers(tc.pods, "cloud-config", seen)
			if n != tc.consumers || !slices.Equal(stale, tc.stale) || more != 0 {
				t.Errorf("consumers %d, stale %v (+%d); want %d, %v", n, stale, more, tc.consumers, tc.stale)
			}
		})
	}
	var many []corev1.Pod
	for i := range MaxStaleConsumers + 3 {
		many = append(many, pod(fmt.Sprintf("p%02d", i), -time.Hour, vol("cloud-config"), running(-time.Hour)))
	}
	if n, stale, more := staleConsumers(many, "cloud-config", seen); n != MaxStaleConsumers+3 || len(stale) != MaxStaleConsumers || more != 3 {
		t.Errorf("many: %d consumers, %d stale, %d more", n, len(stale), more)
	}
}

// TestWorkloadCondition: the condition takes the worst entry's reason; a missing Secret is no problem while
// another is checked; every Secret missing, or none readable, is Unknown.
func TestWorkloadCondition(t *testing.T) {
	e := func(reason string) v1alpha1.WorkloadCredentialStatus {
		return v1alpha1.WorkloadCredentialStatus{Secret: "kube-system/" + reason, Reason: reason, Message: "msg " + reason}
	}
	tests := []struct {
		name    string
		entries []v1alpha1.WorkloadCredentialStatus
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"valid and not found", []v1alpha1.WorkloadCredentialStatus{e(ReasonValid), e(ReasonNotFound)}, metav1.ConditionTrue, ReasonValid, "msg Valid"},
		{"no expiry and valid", []v1alpha1.WorkloadCredentialStatus{e(ReasonNoExpiry), e(ReasonValid)}, metav1.ConditionTrue, ReasonValid, "msg NoExpiry; msg Valid"},
		{"expiring", []v1alpha1.WorkloadCredentialStatus{e(ReasonNoExpiry), e(ReasonExpiringSoon)}, metav1.ConditionFalse, ReasonExpiringSoon, "msg ExpiringSoon"},
		{"stale consumers", []v1alpha1.WorkloadCredentialStatus{e(ReasonConsumersStale), e(ReasonValid)}, metav1.ConditionFalse, ReasonConsumersStale, "msg ConsumersStale"},
		{"refused beats expiring", []v1alpha1.WorkloadCredentialStatus{e(ReasonExpiringSoon), e(tenancy.ReasonInvalidCredentials)}, metav1.ConditionFalse, tenancy.ReasonInvalidCredentials, "msg InvalidCredentials"},
		{"expired beats all", []v1alpha1.WorkloadCredentialStatus{e(tenancy.ReasonInvalidCredentials), e(ReasonExpired)}, metav1.ConditionFalse, ReasonExpired, "msg Expired"},
		{"another Keystone", []v1alpha1.WorkloadCredentialStatus{e(tenancy.ReasonOtherKeystone), e(ReasonNoExpiry)}, metav1.ConditionUnknown, tenancy.ReasonOtherKeystone, "msg OtherKeystone"},
		{"forbidden", []v1alpha1.WorkloadCredentialStatus{e(ReasonNotReadable), e(ReasonNotReadable)}, metav1.ConditionUnknown, ReasonNotReadable, "msg NotReadable"},
		{"an unknown reason is taken as an outage", []v1alpha1.WorkloadCredentialStatus{e("Weird"), e(ReasonValid)}, metav1.ConditionUnknown, tenancy.ReasonCloudUnavailable, "msg Weird"},
		{"all missing", []v1alpha1.WorkloadCredentialStatus{e(ReasonNotFound), e(ReasonNotFound)}, metav1.ConditionUnknown, ReasonNotFound, "spec.workloadCredentials.secrets"},
		{"none", nil, metav1.ConditionUnknown, ReasonNotFound, "no workload secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := workloadCondition(tc.entries)
			if c.Type != v1alpha1.ConditionWorkloadCredentialsHealthy || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
				t.Errorf("got %s/%s %q, want %s/%s with %q", c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
			}
		})
	}
}

// TestSecretAuth: which key of a consumer Secret is read, in which form; use-clouds follows to the Secret's
// clouds.yaml; what holds no credentials says so without quoting it.
func TestSecretAuth(t *testing.T) {
	const pw = "s3cr3t-wl"
	conf := "[Global]\nauth-url = https://k:5000/v3\napplication-credential-id = id1\napplication-credential-secret = " + pw + "\n"
	yml := "clouds:\n  prod:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: https://k:5000\n      application_credential_id: id2\n      application_credential_secret: " + pw + "\n"
	tests := []struct {
		name   string
		data   map[string]string
		ref    v1alpha1.WorkloadCredentialsSecret
		key    string // the key read ("" none)
		wantID string // the application credential read
		errMsg string
	}{
		{name: "cloud.conf", data: map[string]string{"cloud.conf": conf}, key: "cloud.conf", wantID: "id1"},
		{name: "cloud.conf first", data: map[string]string{"cloud.conf": conf, "clouds.yaml": yml}, key: "cloud.conf", wantID: "id1"},
		{name: "clouds.yaml alone", data: map[string]string{"clouds.yaml": yml}, ref: v1alpha1.WorkloadCredentialsSecret{Cloud: "prod"}, key: "clouds.yaml", wantID: "id2"},
		{name: "use-clouds", data: map[string]string{"cloud.conf": "[Global]\nuse-clouds = true\ncloud = prod\n", "clouds.yaml": yml}, key: "cloud.conf", wantID: "id2"},
		{name: "use-clouds without clouds.yaml", data: map[string]string{"cloud.conf": "[Global]\nuse-clouds = true\n"}, key: "cloud.conf", errMsg: "no key clouds.yaml"},
		{name: "a key of the spec", data: map[string]string{"cloud.conf": "x", "ccm.conf": conf}, ref: v1alpha1.WorkloadCredentialsSecret{Key: "ccm.conf"}, key: "ccm.conf", wantID: "id1"},
		{name: "the key of the spec missing", data: map[string]string{"cloud.conf": conf}, ref: v1alpha1.WorkloadCredentialsSecret{Key: "ccm.conf"}},
		{name: "no known key", data: map[string]string{"password": pw}},
		{name: "clouds.yaml without the cloud", data: map[string]string{"clouds.yaml": yml}, key: "clouds.yaml", errMsg: "no such cloud"},
		{name: "not a cloud.conf", data: map[string]string{"cloud.conf": pw}, key: "cloud.conf", errMsg: "invalid line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cloud-config"}, Data: map[string][]byte{}}
			for k, v := range tc.data {
				sec.Data[k] = []byte(v)
			}
			k := secretKey(sec, tc.ref)
			if k != tc.key {
				t.Fatalf("key %q, want %q", k, tc.key)
			}
			if k == "" {
				return
			}
			a, err := secretAuth(sec, k, tc.ref, "workload secret kube-system/cloud-config key "+k)
			if tc.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errMsg) || strings.Contains(err.Error(), pw) {
					t.Fatalf("error %v, want %q without the secret", err, tc.errMsg)
				}
				return
			}
			if err != nil || a.Options.ApplicationCredentialID != tc.wantID {
				t.Fatalf("got %q, %v; want %s", a.Options.ApplicationCredentialID, err, tc.wantID)
			}
		})
	}
}

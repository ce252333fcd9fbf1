package e2e

// Secrets never in logs (issue 27): a random marker in every field of a cluster's credentials Secret
// (clouds.yaml: auth_url, user, password, project, domains, application credential, region, cacert) and
// of its workload kubeconfig Secret (server, cluster, user and context names, token, basic auth,
// certificates), the whole operator at debug level against the real kube-apiserver and Keystone, through
// tenancy resolution and workload access, verified and refused; then the marker is looked for in the logs,
// the VitalsClusters, the Events, the metrics and the health endpoints.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testcert"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// secPEM is a real (self-signed) certificate, its common name the marker, and its key, as PEM with the
// marker in a comment line after the block: a valid bundle that carries the marker in plain text (Go's
// certificate pools skip blocks with headers).
func secPEM(t *testing.T, marker string) (cert, key string) {
	t.Helper()
	pair := testcert.CA(t, marker)
	return string(pair.CertPEM()) + "# " + marker + "\n", string(pair.KeyPEM()) + "# " + marker + "\n"
}

// secIndent indents every line of s by n spaces (a PEM block under a YAML block scalar).
func secIndent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
}

func TestOperatorSecretsNeverLogged(t *testing.T) {
	cfg, c, ns := opKube(t)
	env := testenv.OpenStack(t)
	ctx := context.Background()
	marker := "mk" + opRandHex(8) // lower-case hex: also a valid host name label
	// every client-go request metric, the opt-in ones too: each is labelled with its server's host
	ctrlmetrics.RegisterRESTClientMetrics(ctrlmetrics.MetricRequestLatency, ctrlmetrics.MetricDNSResolutionLatency,
		ctrlmetrics.MetricRequestSize, ctrlmetrics.MetricResponseSize, ctrlmetrics.MetricRateLimiterLatency,
		ctrlmetrics.MetricRequestRetry)
	cert, key := secPEM(t, marker)
	_, admin, net := opCloudNet(t, env)

	// The real Keystone under a path that carries the marker: auth_url holds it, and still authenticates.
	ks, err := url.Parse(env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	ks.Path = ""
	rp := httputil.NewSingleHostReverseProxy(ks)
	proxy := httptest.NewServer(http.StripPrefix("/"+marker, rp))
	defer proxy.Close()
	markedAuthURL := proxy.URL + "/" + marker + "/v3"

	clouds := func(entry string) string { return "clouds:\n  openstack:\n" + entry }
	cacert := "    cacert: |\n" + secIndent(cert, 6) + "\n"
	secrets := map[string]map[string]string{
		// authenticates (through the marked path): tenancy goes all the way, with a marked cacert
		"ok": {"clouds.yaml": clouds(fmt.Sprintf("    auth:\n      auth_url: %s\n      username: %s\n      password: %s\n      project_name: %s\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: %s\n    interface: public\n",
			markedAuthURL, env.Username, env.Password, env.ProjectName, env.RegionName) + cacert)},
		// authenticates, but in a region that is the marker: no service found
		"region": {"clouds.yaml": clouds(fmt.Sprintf("    auth:\n      auth_url: %s\n      username: %s\n      password: %s\n      project_name: %s\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: %s\n",
			markedAuthURL, env.Username, env.Password, env.ProjectName, marker))},
		// every field the marker, on a host that does not resolve
		"names": {"clouds.yaml": clouds(fmt.Sprintf("    auth:\n      auth_url: https://%[1]s.invalid/%[1]s/v3\n      username: %[1]s\n      password: %[1]s\n      project_name: %[1]s\n      user_domain_name: %[1]s\n      project_domain_name: %[1]s\n    region_name: %[1]s\n", marker) + cacert)},
		// refused by the real Keystone (401): names, then IDs, then an application credential
		"wrong":        {"clouds.yaml": clouds(fmt.Sprintf("    auth:\n      auth_url: %[2]s\n      username: %[1]s\n      password: %[1]s\n      project_name: %[1]s\n      user_domain_name: %[1]s\n      project_domain_name: %[1]s\n    region_name: %[1]s\n", marker, markedAuthURL))},
		"ids":          {"clouds.yaml": clouds(fmt.Sprintf("    auth:\n      auth_url: %[2]s\n      user_id: %[1]s\n      password: %[1]s\n      project_id: %[1]s\n      domain_id: %[1]s\n", marker, markedAuthURL))},
		"appcred":      {"clouds.yaml": clouds(fmt.Sprintf("    auth_type: v3applicationcredential\n    auth:\n      auth_url: %[2]s\n      application_credential_id: %[1]s\n      application_credential_secret: %[1]s\n", marker, markedAuthURL))},
		"appcred-name": {"clouds.yaml": clouds(fmt.Sprintf("    auth_type: v3applicationcredential\n    auth:\n      auth_url: %[2]s\n      application_credential_name: %[1]s\n      application_credential_secret: %[1]s\n      username: %[1]s\n      user_domain_name: %[1]s\n", marker, markedAuthURL))},
	}
	// Workload kubeconfigs: the shared kube-apiserver with a token that is the marker (401), its CA with
	// the marker in a header; a server that is the marker; client certificates the API server does not
	// know; names of every entry the marker.
	shared := cfg.Host
	realCA := string(cfg.CAData)
	if realCA == "" && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		realCA = string(b)
	}
	if !strings.HasPrefix(realCA, "-----BEGIN CERTIFICATE-----\n") {
		t.Fatal("the test kube-apiserver's client configuration has no CA")
	}
	markedCA := strings.TrimRight(realCA, "\n") + "\n# " + marker + "\n"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	kubeconfig := func(server, ca, user string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: %[1]s, cluster: {server: %[2]q, certificate-authority-data: %[3]s}}]
users: [{name: %[1]s, user: {%[4]s}}]
contexts: [{name: %[1]s, context: {cluster: %[1]s, user: %[1]s, namespace: %[1]s}}]
current-context: %[1]s
`, marker, server, b64(ca), user)
	}
	secrets["kube-token"] = map[string]string{"kubeconfig": kubeconfig(shared, markedCA, "token: "+marker)}
	secrets["kube-basic"] = map[string]string{"kubeconfig": kubeconfig(shared, markedCA, "username: "+marker+", password: "+marker)}
	secrets["kube-cert"] = map[string]string{"kubeconfig": kubeconfig(shared, markedCA, "client-certificate-data: "+b64(cert)+", client-key-data: "+b64(key))}
	secrets["kube-server"] = map[string]string{"kubeconfig": kubeconfig("https://"+marker+".invalid:6443/"+marker, cert, "token: "+marker)}
	for name, data := range secrets {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}); err != nil {
			t.Fatal(err)
		}
	}

	// The operator at debug level, its logs (and client-go's, routed as the binary routes them) captured.
	logs := &lockedBuffer{}
	h := slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	var kh slog.Handler = h
	prevKlog := klogTarget.Swap(&kh) // klog's own global is set once (klog_test.go)
	prev := slog.Default()
	slog.SetDefault(slog.New(h))
	// Cleanups run last in first out: these after the operator's (registered by opStart below) has stopped it.
	t.Cleanup(func() {
		klogTarget.Store(prevKlog)
		slog.SetDefault(prev)
	})
	r := opStart(t, operator.Options{RestConfig: cfg, Namespace: ns, Identity: "secrets-test", Logger: slog.New(h),
		CheckInterval: time.Second, CheckTimeout: time.Second, AccessInterval: 2 * time.Second,
		TrustedAuthURLs: []string{proxy.URL + "/"}})

	type want struct{ cloud, workload string } // expected reasons ("" when the cluster has no such part)
	clusters := map[string]struct {
		creds, kube string
		want        want
	}{
		"verified":     {"ok", "kube-token", want{tenancy.ReasonVerified, "*"}},
		"region":       {"region", "kube-basic", want{"*", "*"}},
		"names":        {"names", "kube-server", want{tenancy.ReasonCloudUnavailable, "*"}},
		"wrong":        {"wrong", "kube-cert", want{"*", "*"}},
		"ids":          {"ids", "", want{"*", ""}},
		"appcred":      {"appcred", "", want{"*", ""}},
		"appcred-name": {"appcred-name", "", want{"*", ""}},
	}
	i := 0
	for name, cl := range clusters {
		i++
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: cl.creds}, RouterID: net.Router},
			PodCIDRs:  []v1alpha1.CIDR{v1alpha1.CIDR(fmt.Sprintf("198.19.%d.0/24", i))},
			// deletion is not this test's concern
			Controllers: v1alpha1.ControllersSpec{Deorbit: v1alpha1.DeorbitSpec{Enabled: new(bool)}},
		}}
		if cl.kube != "" {
			vc.Spec.KubeconfigSecretRef = &v1alpha1.SecretKeyRef{Name: cl.kube}
		}
		if err := c.Create(ctx, vc); err != nil {
			t.Fatal(err)
		}
	}
	for name, cl := range clusters {
		opEventually(t, 3*time.Minute, name+" resolved", func() (bool, string) {
			var vc v1alpha1.VitalsCluster
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
				return false, err.Error()
			}
			var got []string
			done := true
			for typ, reason := range map[string]string{v1alpha1.ConditionCloudVerified: cl.want.cloud, v1alpha1.ConditionWorkloadReachable: cl.want.workload} {
				if reason == "" {
					continue
				}
				cd := meta.FindStatusCondition(vc.Status.Conditions, typ)
				if cd == nil || (reason != "*" && cd.Reason != reason) {
					done = false
				}
				if cd != nil {
					got = append(got, typ+"="+cd.Reason+" ("+cd.Message+")")
				}
			}
			return done, strings.Join(got, ", ")
		})
	}
	// A few more passes, so that retries and periodic lines are in the logs too.
	time.Sleep(5 * time.Second)
	if admin.ProjectID() == "" {
		t.Fatal("no project")
	}

	// Where the marker must not be.
	places := map[string]string{"logs": logs.String()}
	var vcs v1alpha1.VitalsClusterList
	if err := c.List(ctx, &vcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, vc := range vcs.Items {
		b, _ := json.Marshal(vc.Status)
		places["status of "+vc.Name] = string(b)
		b, _ = json.Marshal(vc.ObjectMeta.Annotations)
		places["annotations of "+vc.Name] = string(b)
	}
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var coreEvs corev1.EventList
	if err := c.List(ctx, &coreEvs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	places["Events"] = string(b)
	b, _ = json.Marshal(coreEvs)
	places["core Events"] = string(b)
	var metrics strings.Builder
	for _, g := range []prometheus.Gatherer{r.reg, ctrlmetrics.Registry} {
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			_, _ = expfmt.MetricFamilyToText(&metrics, mf)
		}
	}
	// client-go's request metrics (rest_client_*, process-wide, every opt-in one enabled above) are
	// checked too: they label each request with its host, which for a workload cluster is the
	// tenant's (workload.KeepHostLabel).
	places["metrics"] = metrics.String()
	if !regexp.MustCompile(`(?m)^rest_client_requests_total\{.*host="` + workload.OtherHost + `"`).MatchString(places["metrics"]) {
		t.Errorf("no rest_client_requests_total labelled host=%q (kube-server's requests): the metrics checked are not the ones that carried the host", workload.OtherHost)
	}
	for _, p := range []string{"/livez?verbose", "/readyz?verbose"} {
		_, body := probe(r.op.HealthAddr(), p)
		places["health "+p] = body
	}
	if !strings.Contains(places["logs"], "openstack connected") {
		t.Errorf("no \"openstack connected\" line at debug level: the verified path did not run")
	}
	// The marker, and the first base64 line of the certificate and of the key (their contents, not the marker).
	needles := []string{marker, strings.Split(cert, "\n")[1], strings.Split(key, "\n")[1]}
	for where, text := range places {
		for _, needle := range needles {
			if i := strings.Index(text, needle); i >= 0 {
				t.Errorf("the Secrets' contents (%.12s...) reached the %s: ...%s...", needle, where, text[max(0, i-300):min(len(text), i+100)])
			}
		}
	}
	t.Logf("looked in %d places; %d bytes of logs", len(places), len(places["logs"]))
}

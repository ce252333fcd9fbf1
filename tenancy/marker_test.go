package tenancy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

const marker = "MARKER-7e4a47-c10d"

// lockedBuffer is a log sink that tests read after the calls.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestMarkerQuotedNowhere: a marker in every field of a credentials Secret (user,
// password, project, domains, region; the auth URL by its host and port) and in every body the cloud answers, at every failure point (the first
// authentication, a re-authentication inside a later request, the catalog, a service's error), against the
// real Keystone and Neutron behind the fault proxy: the marker is in no Refusal (the CloudVerified condition,
// Ready's message and the Event are made of it) and in no log line at any level.
func TestMarkerQuotedNowhere(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	fp, err := faultproxy.NewCloud(e.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fp.Close() })
	// Neutron's proxy, from the real catalog, before the first token through the proxy.
	admin := openstack.Auth{Options: e.AuthOptions(), Region: e.RegionName, Source: "test"}
	direct, err := openstack.Connect(t.Context(), openstack.Config{Auth: admin})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := direct.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	nu, _ := url.Parse(nc.Endpoint)
	neutron, err := fp.Service(nu.Scheme + "://" + nu.Host)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(fp.AuthURL())
	// The auth URL cannot carry the marker (user information is refused, the path is Keystone's): the test
	// looks for its host and port instead.
	markedURL := fp.AuthURL()

	cloudsYAML := func(authURL, user, password, project, region string) string {
		return fmt.Sprintf(`clouds:
  openstack:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: %s
      project_domain_name: %s
    region_name: %s
`, authURL, user, password, project, e.UserDomainName, e.ProjectDomainName, region)
	}
	allMarked := strings.ReplaceAll(cloudsYAML(markedURL, marker, marker, marker, marker), "domain_name: "+e.UserDomainName, "domain_name: "+marker)
	secrets := map[string]string{
		"first-auth": allMarked,
		"catalog":    cloudsYAML(markedURL, e.Username, e.Password, e.ProjectName, marker),
		"working":    cloudsYAML(markedURL, e.Username, e.Password, e.ProjectName, e.RegionName),
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	b := fake.NewClientBuilder().WithScheme(scheme)
	for name, data := range secrets {
		b = b.WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "marker-ns", Name: name, UID: types.UID("uid-marker-" + name), ResourceVersion: "1"},
			Data: map[string][]byte{"clouds.yaml": []byte(data)}})
	}
	kube := b.Build()
	logs := &lockedBuffer{}
	v := tenancy.NewVerifier(tenancy.Options{
		Secrets: kube, TrustedAuthURLs: []string{pu.Scheme + "://" + pu.Host},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Connect: func(ctx context.Context, a openstack.Auth, tr http.RoundTripper) (tenancy.Connection, error) {
			return openstack.Connect(ctx, openstack.Config{Auth: a, Transport: tr, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		},
	})
	cluster := func(name, secret string) *v1alpha1.VitalsCluster {
		return &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "marker-ns", Name: name, UID: types.UID("uid-marker-" + name)},
			Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: secret},
				RouterID: "00000000-0000-4000-8000-00000000aaaa"}}}
	}
	for _, tc := range []struct {
		name, secret, reason string
		setup                func(t *testing.T)
		injected             func() int
	}{
		{name: "first authentication", secret: "first-auth", reason: tenancy.ReasonInvalidCredentials},
		{name: "catalog", secret: "catalog", reason: tenancy.ReasonCloudUnavailable},
		{name: "re-authentication inside a request", secret: "working", reason: tenancy.ReasonInvalidCredentials,
			setup: func(t *testing.T) {
				if err := neutron.Add(faultproxy.Rule{Name: "expired", Method: "GET", Path: "/v2.0/routers/*", Times: 1,
					Fault: faultproxy.Status(http.StatusUnauthorized, faultproxy.StyleNeutron, marker)}); err != nil {
					t.Fatal(err)
				}
				if err := fp.Keystone().Add(faultproxy.Rule{Name: "reauth", Method: "POST", Path: "/v3/auth/tokens", Sequence: []faultproxy.Fault{
					faultproxy.Pass(), faultproxy.Status(http.StatusUnauthorized, faultproxy.StyleKeystone, marker)}}); err != nil {
					t.Fatal(err)
				}
			},
			injected: func() int { return neutron.Count("expired") + fp.Keystone().Count("reauth") }},
		{name: "service error", secret: "working", reason: tenancy.ReasonCloudUnavailable,
			setup: func(t *testing.T) {
				neutron.Clear()
				fp.Keystone().Clear()
				v.Forget(types.NamespacedName{Namespace: "marker-ns", Name: "service-error"})
				if err := neutron.Add(faultproxy.Rule{Name: "neutron-500", Method: "GET", Path: "/v2.0/routers/*", Times: 1,
					Fault: faultproxy.Status(http.StatusInternalServerError, faultproxy.StyleNeutron, marker+" "+markedURL)}); err != nil {
					t.Fatal(err)
				}
			},
			injected: func() int { return neutron.Count("neutron-500") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			c := cluster(strings.ReplaceAll(tc.name, " ", "-"), tc.secret)
			_, err := v.Resolve(t.Context(), c)
			var r *tenancy.Refusal
			if err == nil {
				t.Fatal("Resolve succeeded")
			}
			if !errors.As(err, &r) {
				// What controllers/access writes for an error that is no Refusal.
				r = &tenancy.Refusal{Reason: tenancy.ReasonCloudUnavailable, Message: openstack.Describe(err)}
			}
			if tc.injected != nil && tc.injected() == 0 {
				t.Fatal("no fault was injected")
			}
			if r.Reason != tc.reason || strings.Contains(r.Error(), marker) || strings.Contains(r.Error(), pu.Host) {
				t.Fatalf("Refusal %q; want reason %s, without the marker or the auth URL", r.Error(), tc.reason)
			}
			t.Logf("%s: %s", tc.name, r.Error())
		})
	}
	if l := logs.String(); strings.Contains(l, marker) || strings.Contains(l, pu.Host) {
		t.Fatalf("the log quotes the Secret or the cloud:\n%s", l)
	}
}

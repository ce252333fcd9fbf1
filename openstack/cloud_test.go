package openstack_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

func connect(t *testing.T, cfg openstack.Config) *openstack.Cloud {
	t.Helper()
	if cfg.HTTPTimeout == 0 {
		cfg.HTTPTimeout = 5 * time.Minute // only against hangs: a loaded machine makes the services slow
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := openstack.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("Connect(%s): %v", cfg.Auth.Source, err)
	}
	return c
}

// TestConnectByEachMethod authenticates with clouds.yaml (+ secure.yaml), OS_* variables and a
// Kuryr-style INI section, and makes one Neutron call with each.
func TestConnectByEachMethod(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cloudsPath := write("clouds.yaml", fmt.Sprintf(`clouds:
  test:
    auth:
      auth_url: %s
      username: %s
      project_name: %s
      user_domain_name: %s
      project_domain_name: %s
    region_name: %s
  other:
    auth:
      auth_url: http://127.0.0.1:1/v3
`, e.AuthURL, e.Username, e.ProjectName, e.UserDomainName, e.ProjectDomainName, e.RegionName))
	write("secure.yaml", fmt.Sprintf("clouds:\n  test:\n    auth:\n      password: %s\n", e.Password))
	iniPath := write("kuryr.conf", fmt.Sprintf(`[DEFAULT]
debug = false

[neutron]
auth_type = password
auth_url = %s
username = %s
password = %s
user_domain_name = %s
project_name = %s
project_domain_name = %s
region_name = %s
`, e.AuthURL, e.Username, e.Password, e.UserDomainName, e.ProjectName, e.ProjectDomainName, e.RegionName))

	clouds, err := openstack.AuthFromCloudsYAML(openstack.CloudsYAMLOptions{
		Getenv: func(k string) string {
			return map[string]string{"OS_CLOUD": "test", "OS_CLIENT_CONFIG_FILE": cloudsPath}[k]
		}})
	if err != nil {
		t.Fatalf("clouds.yaml: %v", err)
	}
	ini, err := openstack.AuthFromINI(iniPath)
	if err != nil {
		t.Fatalf("INI: %v", err)
	}
	for _, tc := range []struct {
		name string
		a    openstack.Auth
	}{{"clouds.yaml", clouds}, {"env", envAuth(t, e)}, {"ini", ini}} {
		a := tc.a
		t.Run(tc.name, func(t *testing.T) {
			c := connect(t, openstack.Config{Auth: a, Require: []openstack.Service{openstack.ServiceNetworking}})
			if c.ProjectID() == "" || c.Token() == "" {
				t.Fatalf("project %q token %q", c.ProjectID(), c.Token())
			}
			if _, err := c.ListRouters(t.Context(), openstack.ListOpts{ProjectID: c.ProjectID()}); err != nil {
				t.Fatalf("ListRouters: %v", err)
			}
		})
	}
}

func TestConnectErrors(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	good := envAuth(t, e)

	t.Run("wrong password", func(t *testing.T) {
		a := good
		a.Options.Password = "not-the-password"
		_, err := openstack.Connect(t.Context(), openstack.Config{Auth: a, HTTPTimeout: 5 * time.Minute})
		want := fmt.Sprintf("authenticate to %s as %s: wrong credentials", e.AuthURL, e.Username)
		if !errors.Is(err, openstack.ErrWrongCredentials) || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("err = %v; want %q...", err, want)
		}
		t.Log(err)
	})
	t.Run("unreachable", func(t *testing.T) {
		a := good
		a.Options.IdentityEndpoint = "http://127.0.0.1:1/v3"
		_, err := openstack.Connect(t.Context(), openstack.Config{Auth: a, HTTPTimeout: 5 * time.Minute})
		if !errors.Is(err, openstack.ErrUnreachable) || !strings.Contains(err.Error(), "authenticate to http://127.0.0.1:1/v3") {
			t.Fatalf("err = %v; want Keystone unreachable", err)
		}
		t.Log(err)
	})
	t.Run("missing service at use", func(t *testing.T) {
		a := good
		a.Region = "NoSuchRegion"
		c := connect(t, openstack.Config{Auth: a})
		_, err := c.ListPorts(t.Context(), openstack.ListOpts{})
		if !errors.Is(err, openstack.ErrServiceUnavailable) || !strings.Contains(err.Error(), `network service (the region and interface of `) || strings.Contains(err.Error(), "NoSuchRegion") {
			t.Fatalf("err = %v; want the network service unavailable", err)
		}
		t.Log(err)
		_, err = openstack.Connect(t.Context(), openstack.Config{Auth: a, HTTPTimeout: 5 * time.Minute, Require: []openstack.Service{openstack.ServiceNetworking}})
		if !errors.Is(err, openstack.ErrServiceUnavailable) {
			t.Fatalf("Connect requiring networking: err = %v", err)
		}
	})
}

// TestReauthAfterRevocation revokes the cloud's token in Keystone; the next call still succeeds
// with a new token.
func TestReauthAfterRevocation(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	c := connect(t, openstack.Config{Auth: envAuth(t, e)})
	ic, err := c.Client(openstack.ServiceIdentity)
	if err != nil {
		t.Fatal(err)
	}
	old := c.Token()
	if err := tokens.Revoke(t.Context(), ic, old).Err; err != nil {
		t.Fatalf("revoke token: %v", err)
	}
	if ok, err := tokens.Validate(t.Context(), ic, old); err != nil || ok {
		// Validate itself re-authenticates (the revoked token is refused as X-Auth-Token too).
		t.Fatalf("revoked token still valid (%v, %v)", ok, err)
	}
	if _, err := c.ListRouters(t.Context(), openstack.ListOpts{ProjectID: c.ProjectID()}); err != nil {
		t.Fatalf("call after revocation: %v", err)
	}
	if c.Token() == old {
		t.Fatal("token unchanged after revocation")
	}
}

// metric sums the samples of a counter (or the sample counts of a histogram) whose labels include want.
func metric(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (count, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if !hasLabel(m, k, v) {
					continue next
				}
			}
			if h := m.GetHistogram(); h != nil {
				count += float64(h.GetSampleCount())
				sum += h.GetSampleSum()
			} else {
				count += m.GetCounter().GetValue()
			}
		}
	}
	return count, sum
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k {
			return l.GetValue() == v
		}
	}
	return false
}

// TestRateLimiterAndMetrics checks that requests wait for the limiter and are counted by service
// and operation, with errors and latency.
func TestRateLimiterAndMetrics(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	reg := prometheus.NewRegistry()
	c := connect(t, openstack.Config{Auth: envAuth(t, e), QPS: 2, Burst: 1, Registerer: reg})
	ctx := t.Context()
	if n, _ := metric(t, reg, "vitals_openstack_requests_total", map[string]string{"openstack_service": "identity", "operation": "POST /v3/auth/tokens", "code": "201"}); n < 1 {
		t.Errorf("token requests counted: %v, want >= 1", n)
	}

	// Three security groups of one name, listed with a page size of 1: one request per page.
	nc, _ := c.Client(openstack.ServiceNetworking)
	gname := fmt.Sprintf("vitals-ratelimit-%d", time.Now().UnixNano())
	for i := 0; i < 3; i++ {
		g, err := groups.Create(ctx, nc, groups.CreateOpts{Name: gname}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = groups.Delete(context.Background(), nc, g.ID).ExtractErr() })
	}
	before, _ := metric(t, reg, "vitals_openstack_requests_total", map[string]string{"operation": "GET /v2.0/security-groups"})
	gs, err := c.ListSecurityGroups(ctx, openstack.ListOpts{Name: gname, PageSize: 1})
	if err != nil || len(gs) != 3 {
		t.Fatalf("ListSecurityGroups(page size 1) = %d groups, %v", len(gs), err)
	}
	after, _ := metric(t, reg, "vitals_openstack_requests_total", map[string]string{"openstack_service": "network", "operation": "GET /v2.0/security-groups", "code": "200"})
	if after-before < 3 {
		t.Errorf("page size 1 over 3 groups took %v requests, want >= 3", after-before)
	}

	// A 404 is counted as an error of its operation.
	if _, err := c.GetRouter(ctx, "00000000-0000-4000-8000-000000000000"); !openstack.IsNotFound(err) {
		t.Fatalf("GetRouter(missing): %v", err)
	}
	if n, _ := metric(t, reg, "vitals_openstack_request_errors_total", map[string]string{"openstack_service": "network", "operation": "GET /v2.0/routers/{id}", "reason": "404"}); n != 1 {
		t.Errorf("404 errors counted: %v, want 1", n)
	}
	if n, _ := metric(t, reg, "vitals_openstack_request_duration_seconds", map[string]string{"openstack_service": "network", "operation": "GET /v2.0/routers/{id}"}); n != 1 {
		t.Errorf("latency observations: %v, want 1", n)
	}

	// Three requests at once with a burst of 1: at least two of them wait for the limiter.
	_, waitedBefore := metric(t, reg, "vitals_openstack_rate_limiter_wait_seconds", nil)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.ListSecurityGroups(ctx, openstack.ListOpts{Name: gname}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, waited := metric(t, reg, "vitals_openstack_rate_limiter_wait_seconds", nil); waited-waitedBefore <= 0 {
		t.Errorf("concurrent requests did not wait for the rate limiter (waited %vs)", waited-waitedBefore)
	}

	// A deadline shorter than the limiter's wait fails at once, naming the limiter.
	slow := connect(t, openstack.Config{Auth: envAuth(t, e), QPS: 0.001, Burst: 1})
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = slow.ListSecurityGroups(short, openstack.ListOpts{Name: gname})
	if err == nil || !strings.Contains(err.Error(), "rate limiter") {
		t.Fatalf("request beyond the rate limit: err %v; want a rate limiter error", err)
	}
}

package openstack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/internal/base/bounded"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

const marker = "MARKER-c1a55-7e57"

// TestClassifyErrors: every kind of error the client library returns becomes a class and a status code;
// the URL and body it carried appear in no message, and the predicates keep working.
func TestClassifyErrors(t *testing.T) {
	url := "https://" + marker + ".example:5000/v3/auth/tokens"
	code := func(n int) gophercloud.ErrUnexpectedResponseCode {
		return gophercloud.ErrUnexpectedResponseCode{URL: url, Method: "GET", Expected: []int{200}, Actual: n, Body: []byte(marker)}
	}
	reauth := func(n int) error {
		return gophercloud.ErrUnableToReauthenticate{ErrOriginal: code(401), ErrReauth: code(n)}
	}
	for _, tc := range []struct {
		name  string
		err   error
		class openstack.Class
		code  int
		msg   string
		is    []error
		pred  func(error) bool
	}{
		{"404", code(404), openstack.ClassHTTP, 404, "the cloud answered HTTP 404 (Not Found)", nil, openstack.IsNotFound},
		{"412 wrapped", fmt.Errorf("x: %w", code(412)), openstack.ClassHTTP, 412, "HTTP 412", nil, openstack.IsConflict},
		{"reauth 401", reauth(401), openstack.ClassReauthentication, 401, "re-authentication failed: Keystone answered HTTP 401", []error{openstack.ErrWrongCredentials}, nil},
		{"reauth pointer 500", &gophercloud.ErrUnableToReauthenticate{ErrOriginal: code(401), ErrReauth: code(500)}, openstack.ClassReauthentication, 500, "Keystone answered HTTP 500", nil, nil},
		{"reauth unreachable", gophercloud.ErrUnableToReauthenticate{ErrOriginal: code(401), ErrReauth: &net.OpError{Op: "dial", Err: errors.New(marker)}}, openstack.ClassReauthentication, 0, "re-authentication failed: Keystone could not be asked", nil, nil},
		{"too large", fmt.Errorf("%s: %w", marker, bounded.ErrTooLarge), openstack.ClassTooLarge, 0, "larger than the operator reads", nil, nil},
		{"deadline", fmt.Errorf("Get %q: %w", url, context.DeadlineExceeded), openstack.ClassTimeout, 0, "timed out", []error{context.DeadlineExceeded}, nil},
		{"dial", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New(marker)}, openstack.ClassUnreachable, 0, "cannot be reached", []error{openstack.ErrUnreachable}, nil},
		{"json", fmt.Errorf("decode: %w", jsonSyntax()), openstack.ClassUndecodable, 0, "could not be decoded", nil, nil},
		{"other", errors.New(marker), openstack.ClassUnclassified, 0, "unclassified", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := openstack.Classify(tc.err)
			msg := fmt.Errorf("get router r1: %w", err).Error()
			if strings.Contains(msg, marker) || !strings.Contains(msg, tc.msg) {
				t.Fatalf("message %q; want %q and no marker", msg, tc.msg)
			}
			if c, n := openstack.ClassOf(err); c != tc.class || n != tc.code {
				t.Fatalf("ClassOf = %s %d; want %s %d", c, n, tc.class, tc.code)
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Fatalf("errors.Is(%v) = false", target)
				}
			}
			if tc.pred != nil && !tc.pred(fmt.Errorf("wrapped: %w", err)) {
				t.Fatal("predicate false after Classify")
			}
			if again := openstack.Classify(err); again != err { //nolint:errorlint // identity
				t.Fatal("Classify of a classified error changed it")
			}
		})
	}
	if openstack.Classify(nil) != nil || openstack.Describe(nil) != "" {
		t.Fatal("nil classified as an error")
	}
}

func jsonSyntax() error {
	var v any
	return json.Unmarshal([]byte("{"+marker), &v)
}

// TestCloudErrorsQuoteNothing: against the real cloud behind the fault proxy, every failure point (the first
// authentication, the re-authentication inside a later request, a missing catalog region, each service's
// error) yields an error that names the class and the status code, never the auth URL, the user, the region
// or the body the cloud answered.
func TestCloudErrorsQuoteNothing(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	fp, err := faultproxy.NewCloud(e.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fp.Close() })
	a := envAuth(t, e)
	a.Options.IdentityEndpoint = fp.AuthURL()
	forbidden := []string{marker, fp.AuthURL(), strings.TrimPrefix(fp.Keystone().URL(), "http://"), e.Username}
	clean := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		msg := openstack.Describe(err)
		if msg != err.Error() {
			t.Fatalf("%s: error %q is not classified (Describe: %q)", what, err, msg)
		}
		for _, f := range forbidden {
			if strings.Contains(msg, f) {
				t.Fatalf("%s: %q quotes %q", what, msg, f)
			}
		}
		if !strings.Contains(msg, want) {
			t.Fatalf("%s: %q; want %q", what, msg, want)
		}
		t.Logf("%s: %s", what, msg)
	}
	// The services' real origins, for their proxies: the proxied catalog names the proxies.
	direct := connect(t, openstack.Config{Auth: envAuth(t, e)})
	proxyOf := func(t *testing.T, s openstack.Service) *faultproxy.Proxy {
		t.Helper()
		sc, err := direct.Client(s)
		if err != nil {
			t.Fatal(err)
		}
		p, err := fp.Service(origin(sc.Endpoint))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, s := range []openstack.Service{openstack.ServiceNetworking, openstack.ServiceCompute, openstack.ServiceBlockStorage, openstack.ServiceLoadBalancer} {
		if direct.Has(s) {
			proxyOf(t, s)
		}
	}
	c := connect(t, openstack.Config{Auth: a})
	project := c.ProjectID()

	t.Run("re-authentication inside a request", func(t *testing.T) {
		neutron := proxyOf(t, openstack.ServiceNetworking)
		if err := neutron.Add(faultproxy.Rule{Name: "expired-token", Method: "GET", Path: "/v2.0/routers", Times: 1,
			Fault: faultproxy.Status(http.StatusUnauthorized, faultproxy.StyleNeutron, marker)}); err != nil {
			t.Fatal(err)
		}
		if err := fp.Keystone().Add(faultproxy.Rule{Name: "reauth-refused", Method: "POST", Path: "/**", Times: 1,
			Fault: faultproxy.Status(http.StatusUnauthorized, faultproxy.StyleKeystone, marker+" "+fp.AuthURL())}); err != nil {
			t.Fatal(err)
		}
		_, err = c.ListRouters(t.Context(), openstack.ListOpts{ProjectID: project})
		if neutron.Count("expired-token") != 1 || fp.Keystone().Count("reauth-refused") != 1 {
			t.Fatalf("faults injected: %d, %d; want 1 and 1", neutron.Count("expired-token"), fp.Keystone().Count("reauth-refused"))
		}
		clean(t, "ListRouters", err, "re-authentication failed: Keystone answered HTTP 401")
		if !errors.Is(err, openstack.ErrWrongCredentials) {
			t.Fatalf("re-authentication refused is not ErrWrongCredentials: %v", err)
		}
		// The rules are spent: the next call re-authenticates and succeeds.
		if _, err := c.ListRouters(t.Context(), openstack.ListOpts{ProjectID: project}); err != nil {
			t.Fatalf("after the faults: %v", err)
		}
	})

	services := []struct {
		s     openstack.Service
		path  string
		style faultproxy.Style
		call  func(ctx context.Context) error
	}{
		{openstack.ServiceNetworking, "/v2.0/**", faultproxy.StyleNeutron, func(ctx context.Context) error {
			_, err := c.ListPorts(ctx, openstack.ListOpts{ProjectID: project})
			return err
		}},
		{openstack.ServiceCompute, "/**", faultproxy.StyleNova, func(ctx context.Context) error {
			_, err := c.ListServers(ctx, openstack.ListOpts{ProjectID: project})
			return err
		}},
		{openstack.ServiceBlockStorage, "/**", faultproxy.StyleNova, func(ctx context.Context) error {
			_, err := c.ListVolumes(ctx, openstack.ListOpts{ProjectID: project})
			return err
		}},
		{openstack.ServiceLoadBalancer, "/**", faultproxy.StyleOctavia, func(ctx context.Context) error {
			_, err := c.ListLoadBalancers(ctx, openstack.ListOpts{ProjectID: project})
			return err
		}},
	}
	for _, s := range services {
		t.Run(string(s.s), func(t *testing.T) {
			if !direct.Has(s.s) {
				if e.Tier == testenv.TierFull {
					t.Fatalf("%s not in the full tier's catalog", s.s)
				}
				t.Logf("%s: not in the %s tier's catalog", s.s, e.Tier)
				return
			}
			p := proxyOf(t, s.s)
			sc, err := c.Client(s.s)
			if err != nil {
				t.Fatal(err)
			}
			rule := "fail-" + string(s.s)
			if err := p.Add(faultproxy.Rule{Name: rule, Method: "GET", Path: s.path, Times: 1,
				Fault: faultproxy.Status(http.StatusInternalServerError, s.style, marker+" "+sc.Endpoint)}); err != nil {
				t.Fatal(err)
			}
			err = s.call(t.Context())
			if p.Count(rule) != 1 {
				t.Fatalf("fault injected %d times; want 1", p.Count(rule))
			}
			clean(t, string(s.s), err, "the cloud answered HTTP 500")
		})
	}

	t.Run("first authentication", func(t *testing.T) {
		fp.Keystone().Clear() // a spent rule still decides the requests it matches
		if err := fp.Keystone().Add(faultproxy.Rule{Name: "auth-500", Method: "POST", Path: "/**", Times: 1,
			Fault: faultproxy.Status(http.StatusInternalServerError, faultproxy.StyleKeystone, marker)}); err != nil {
			t.Fatal(err)
		}
		_, err := openstack.Connect(t.Context(), openstack.Config{Auth: a, HTTPTimeout: 5 * time.Minute})
		if err == nil || strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), "HTTP 500") {
			t.Fatalf("Connect = %v; want HTTP 500 without the body", err)
		}
	})
	t.Run("catalog", func(t *testing.T) {
		b := a
		b.Region = marker
		cc := connect(t, openstack.Config{Auth: b})
		_, err := cc.ListRouters(t.Context(), openstack.ListOpts{ProjectID: project})
		if !errors.Is(err, openstack.ErrServiceUnavailable) {
			t.Fatalf("err = %v; want the service unavailable", err)
		}
		clean(t, "catalog", err, "service not in the catalog")
	})
}

func origin(endpoint string) string {
	i := strings.Index(endpoint, "://")
	j := strings.Index(endpoint[i+3:], "/")
	if j < 0 {
		return endpoint
	}
	return endpoint[:i+3+j]
}

// TestHugeErrorBodyReadBounded: a Keystone (a local HTTP server posing as a tenant's) answering a 32 MiB error
// body costs the operator a few KiB: the error carries at most MaxErrorBodyBytes of it and quotes none, and the
// heap does not grow by the body's size over many tries.
func TestHugeErrorBodyReadBounded(t *testing.T) {
	const size = 32 << 20
	chunk := []byte(strings.Repeat(marker, 1024))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	a := openstack.Auth{Options: gophercloud.AuthOptions{IdentityEndpoint: srv.URL + "/v3", Username: "u", Password: "p", DomainID: "default"}, Source: "test"}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 8 {
		_, err := openstack.Connect(t.Context(), openstack.Config{Auth: a, HTTPTimeout: 5 * time.Minute})
		var code gophercloud.ErrUnexpectedResponseCode
		if !errors.As(err, &code) || code.Actual != http.StatusBadRequest {
			t.Fatalf("Connect = %v; want HTTP 400", err)
		}
		if len(code.Body) > openstack.MaxErrorBodyBytes {
			t.Fatalf("the error holds %d bytes of the body; want at most %d", len(code.Body), openstack.MaxErrorBodyBytes)
		}
		if strings.Contains(err.Error(), marker) || len(err.Error()) > 1024 {
			t.Fatalf("message of %d bytes quotes the body: %.200s", len(err.Error()), err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > size {
		t.Fatalf("8 answers of 32 MiB allocated %s; want less than one body", bounded.Size(grew))
	}
}

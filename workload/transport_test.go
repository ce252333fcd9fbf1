package workload

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/vitalsproject/vitals/internal/test/testcert"
)

// hostile is a TLS server that misbehaves as handler says; it returns a connection to it under lim.
func hostile(t *testing.T, lim Limits, handler http.HandlerFunc) *connection {
	t.Helper()
	srv := httptest.NewTLSServer(handler)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	lim.defaults()
	c, err := connect(&rest.Config{Host: srv.URL, BearerToken: secretToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, lim, &KubeconfigRules{AllowLoopback: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

func probeOf(t *testing.T, c *connection) func(context.Context) error {
	t.Helper()
	p, err := newProbe(c, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLimitsAgainstAHostileServer(t *testing.T) {
	big := strings.Repeat("x", 4096)
	tests := []struct {
		name    string
		lim     Limits
		handler http.HandlerFunc
		path    string // default /readyz
		read    bool   // read the whole body
		want    error
		reason  string
		message string
	}{
		{name: "ready", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+secretToken {
				w.WriteHeader(http.StatusUnauthorized)
			}
			_, _ = io.WriteString(w, "ok")
		}, reason: ReasonReachable},
		{name: "headers never come", lim: Limits{HeaderTimeout: 100 * time.Millisecond},
			handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			want:    errHeaderTimeout, reason: ReasonUnreachable, message: "no response headers"},
		{name: "body drips past the request timeout", lim: Limits{RequestTimeout: 200 * time.Millisecond},
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				for {
					if _, err := w.Write([]byte("x")); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}, read: true, want: errRequestTimeout},
		{name: "body larger than allowed", lim: Limits{MaxResponseBytes: 1024},
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.(http.Flusher).Flush() // chunked: no Content-Length
				_, _ = io.WriteString(w, big)
			}, read: true, want: errTooLarge},
		{name: "announced body larger than allowed", lim: Limits{MaxResponseBytes: 1024},
			handler: func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, big[:2048]) },
			want:    errTooLarge, reason: ReasonUnreachable, message: "larger than the operator accepts"},
		{name: "redirect", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}, want: errRedirect, reason: ReasonUnreachable, message: "redirect"},
		{name: "credentials refused", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "attacker-chosen text")
		}, reason: ReasonUnauthorized, message: "401"},
		{name: "not ready", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "attacker-chosen text")
		}, reason: ReasonUnreachable, message: "the API answered 500 on /readyz"},
		{name: "not ready, the failed checks told", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n")
		}, reason: ReasonUnreachable, message: "not ready: kube-apiserver /readyz: etcd failed: reason withheld"},
		{name: "readyz forbidden", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
		}, reason: ReasonUnauthorized, message: "403"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := hostile(t, tt.lim, tt.handler)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var err error
			if tt.read {
				var resp *http.Response
				resp, err = c.http.Get(c.cfg.Host + "/api")
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
			} else {
				err = probeOf(t, c)(ctx)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if tt.reason == "" {
				return
			}
			d := describe(err, time.Second)
			if ReasonOf(d) != tt.reason || (tt.message != "" && !strings.Contains(fmt.Sprint(d), tt.message)) {
				t.Fatalf("described as %v, want %s with %q", d, tt.reason, tt.message)
			}
			if d != nil && (strings.Contains(d.Error(), "attacker") || strings.Contains(d.Error(), "127.0.0.1")) {
				t.Fatalf("the description quotes the server or its address: %v", d)
			}
		})
	}
}

func TestDescribeTLSFailureNamesNoAddress(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ca := testcert.CA(t, "test").CertPEM() // not the server's
	lim := Limits{}
	lim.defaults()
	c, err := connect(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, lim, &KubeconfigRules{AllowLoopback: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	d := describe(probeOf(t, c)(context.Background()), time.Second)
	if d == nil || !strings.Contains(d.Error(), "certificate") || strings.Contains(d.Error(), "127.0.0.1") {
		t.Fatalf("got %v, want a certificate error without the address", d)
	}
}

func TestDescribeConnectionRefused(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	host := srv.URL
	srv.Close()
	lim := Limits{}
	lim.defaults()
	c, err := connect(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, lim, &KubeconfigRules{AllowLoopback: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	d := describe(probeOf(t, c)(context.Background()), time.Second)
	if d == nil || d.Error() != ReasonUnreachable+": connection refused" {
		t.Fatalf("got %v, want connection refused", d)
	}
}

func TestRefuseForbiddenAddresses(t *testing.T) {
	tests := []struct {
		addr          string
		allowLoopback bool
		want          error
	}{
		{"169.254.169.254:80", false, errForbiddenAddress},
		{"169.254.169.254:80", true, errForbiddenAddress},
		{"[fe80::1]:443", false, errForbiddenAddress},
		{"0.0.0.0:6443", true, errForbiddenAddress},
		{"224.0.0.1:6443", false, errForbiddenAddress},
		{"[::ffff:169.254.1.1]:1", false, errForbiddenAddress},
		{"127.0.0.1:6443", false, errLoopbackAddress},
		{"127.8.9.10:6443", false, errLoopbackAddress},
		{"[::1]:6443", false, errLoopbackAddress},
		{"[::ffff:127.0.0.1]:6443", false, errLoopbackAddress},
		{"127.0.0.1:6443", true, nil},
		{"[::1]:6443", true, nil},
		{"10.0.0.1:6443", false, nil},
		{"[2001:db8::1]:6443", false, nil},
	}
	for _, tt := range tests {
		err := KubeconfigRules{AllowLoopback: tt.allowLoopback}.refuseAddress("tcp", tt.addr, nil)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s (loopback allowed %v): got %v, want %v", tt.addr, tt.allowLoopback, err, tt.want)
		}
	}
}

// A server on a loopback address is refused where it is dialed unless the rules allow it, whatever
// name led there ("localhost" is not refused by the kubeconfig check: it is a name).
func TestDialRefusesLoopback(t *testing.T) {
	lim := Limits{DialTimeout: time.Second}
	lim.defaults()
	c, err := connect(&rest.Config{Host: "https://localhost:1"}, lim, &KubeconfigRules{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	err = probeOf(t, c)(context.Background())
	if !errors.Is(err, errLoopbackAddress) {
		t.Fatalf("got %v, want the address refused", err)
	}
	if d := describe(err, time.Second); !strings.Contains(d.Error(), "--allow-loopback-workload") {
		t.Fatalf("described as %v", d)
	}
}

// A server whose address is link-local is refused where it is dialed, whatever name led there.
func TestDialRefusesLinkLocal(t *testing.T) {
	lim := Limits{DialTimeout: time.Second}
	lim.defaults()
	c, err := connect(&rest.Config{Host: "https://169.254.169.254:443"}, lim, &KubeconfigRules{AllowLoopback: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	err = probeOf(t, c)(context.Background())
	if !errors.Is(err, errForbiddenAddress) {
		t.Fatalf("got %v, want the address refused", err)
	}
	if d := describe(err, time.Second); !strings.Contains(d.Error(), "link-local") {
		t.Fatalf("described as %v", d)
	}
}

// Every client of one workload cluster shares one rate limiter of the configured rate; the client-side
// timeout is off (the transport bounds requests, a client timeout would cut watches).
func TestConnectionSharesOneRateLimiter(t *testing.T) {
	lim := Limits{QPS: 3, Burst: 6}
	lim.defaults()
	c, err := connect(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, lim, &KubeconfigRules{AllowLoopback: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if c.cfg.RateLimiter == nil || c.cfg.RateLimiter.QPS() != 3 {
		t.Fatalf("rate limiter %v", c.cfg.RateLimiter)
	}
	if c.cfg.Timeout != 0 || c.http.Timeout != 0 {
		t.Fatalf("client timeout %s / %s, want none", c.cfg.Timeout, c.http.Timeout)
	}
	if c.base == nil {
		t.Fatal("the access has no transport of its own to close")
	}
}

// Discovery of a workload cluster asks for the per-group documents, so that the REST mapper holds only
// the groups it is asked about; other requests keep their Accept header.
func TestPerGroupDiscovery(t *testing.T) {
	const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
	var got string
	hc := perGroupDiscovery(&http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Get("Accept")
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})})
	tests := []struct {
		url, want string
	}{
		{"https://k.example/api", "application/json"},
		{"https://k.example/apis", "application/json"},
		{"https://k.example/prefix/apis", "application/json"},
		{"https://k.example/api/v1", aggregated},
		{"https://k.example/apis/apps/v1/deployments", aggregated},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
		req.Header.Set("Accept", aggregated)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got != tt.want {
			t.Errorf("%s: Accept %q, want %q", tt.url, got, tt.want)
		}
		if req.Header.Get("Accept") != aggregated {
			t.Errorf("%s: the caller's request was changed", tt.url)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

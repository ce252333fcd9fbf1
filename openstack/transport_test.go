package openstack

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// canned answers every request with 200 and an empty JSON object, without a network.
type canned struct{}

func (canned) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}}, nil
}

func newTestTransport(limiter *rate.Limiter) *transport {
	t := &transport{base: canned{}, limiter: limiter, metrics: newMetrics(prometheus.NewRegistry()), clock: clock.RealClock{}}
	t.setEndpoint("identity", "http://127.0.0.1:5000/")
	t.setEndpoint("identity", "https://keystone.example.com:443/secret-path/")
	t.setEndpoint("network", "http://127.0.0.1:9696/")
	t.setEndpoint("compute", "http://127.0.0.1:8774/v2.1/")
	t.setEndpoint("block-storage", "http://127.0.0.1:8776/v3/9a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d/")
	return t
}

func TestClassify(t *testing.T) {
	tr := newTestTransport(nil)
	tests := []struct{ url, service, op string }{
		{"http://127.0.0.1:9696/v2.0/routers/4f1c5a3e-6d1b-4d5c-9e57-2b3c4d5e6f70", "network", "GET /v2.0/routers/{id}"},
		{"http://127.0.0.1:5000/v3/auth/tokens", "identity", "GET /v3/auth/tokens"},
		// a tenant's Keystone under a path of its own: the path is the Secret's, not the metric's
		{"https://keystone.example.com:443/secret-path/v3/auth/tokens", "identity", "GET /v3/auth/tokens"},
		{"http://127.0.0.1:8776/v3/9a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d/volumes/detail?limit=1", "block-storage", "GET /v3/{id}/volumes/detail"},
		{"http://127.0.0.1:8774/v2.1/servers/detail", "compute", "GET /v2.1/servers/detail"},
		{"http://127.0.0.1:9876/v2/lbaas/loadbalancers", "unknown", "GET /v2/lbaas/loadbalancers"},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest("GET", tc.url, nil)
		s, op := tr.classify(req.Method, req.URL)
		if s != tc.service || op != tc.op {
			t.Errorf("classify(%s) = %s, %s; want %s, %s", tc.url, s, op, tc.service, tc.op)
		}
	}
}

// BenchmarkTransport measures what the rate limiter and metrics add to each request (the base
// transport answers at once, without a network).
func BenchmarkTransport(b *testing.B) {
	for _, bc := range []struct {
		name    string
		limiter *rate.Limiter
	}{
		{"metrics", nil},
		{"metrics+limiter", rate.NewLimiter(rate.Inf, 1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := newTestTransport(bc.limiter)
			req, _ := http.NewRequest("GET", "http://127.0.0.1:9696/v2.0/routers/4f1c5a3e-6d1b-4d5c-9e57-2b3c4d5e6f70", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

package workload

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// client-go's request metrics keep the host of the operator's own server and label every other, a
// workload cluster's from a tenant's kubeconfig, "other": every metric of client-go that has a host,
// the opt-in ones enabled, after real requests to real TLS servers (the tenant's by a name, so that the
// DNS metric sees it too).
func TestClientMetricsNameNoWorkloadHost(t *testing.T) {
	ctrlmetrics.RegisterRESTClientMetrics(ctrlmetrics.MetricRequestLatency, ctrlmetrics.MetricDNSResolutionLatency,
		ctrlmetrics.MetricRequestSize, ctrlmetrics.MetricResponseSize, ctrlmetrics.MetricRateLimiterLatency,
		ctrlmetrics.MetricRequestRetry)
	version := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.1"}`))
	})
	own := httptest.NewTLSServer(version)
	defer own.Close()
	tenantSrv := httptest.NewTLSServer(version)
	defer tenantSrv.Close()
	tu, err := url.Parse(tenantSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	tenantHost := "localhost:" + tu.Port()

	ownCfg := &rest.Config{Host: own.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: own.Certificate().Raw})}}
	if err := KeepHostLabel(ownCfg); err != nil {
		t.Fatal(err)
	}
	// the tenant's server by name; its certificate is httptest's (example.com), verified as such
	tenantCfg := &rest.Config{Host: "https://" + tenantHost, BearerToken: secretToken, TLSClientConfig: rest.TLSClientConfig{
		ServerName: "example.com", CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tenantSrv.Certificate().Raw})}}
	lim := Limits{}
	lim.defaults()
	c, err := connect(tenantCfg, lim, &KubeconfigRules{AllowLoopback: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for name, cfg := range map[string]*rest.Config{"own": ownCfg, "tenant": c.cfg} {
		hc, err := rest.HTTPClientFor(cfg)
		if name == "tenant" {
			hc = c.http
		}
		if err != nil {
			t.Fatal(err)
		}
		dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dc.ServerVersion(); err != nil {
			t.Fatalf("%s server: %v", name, err)
		}
	}

	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "rest_client_") {
			_, _ = expfmt.MetricFamilyToText(&text, mf)
		}
	}
	got := text.String()
	ownHost := strings.TrimPrefix(own.URL, "https://")
	tests := []struct{ family, own, other string }{
		{"rest_client_requests_total", `host="` + ownHost + `"`, `host="other"`},
		{"rest_client_request_duration_seconds", `host="` + ownHost + `"`, `host="other"`},
		{"rest_client_rate_limiter_duration_seconds", "", `host="other"`},
		{"rest_client_response_size_bytes", `host="` + ownHost + `"`, `host="other"`},
		{"rest_client_dns_resolution_duration_seconds", "", `host="other"`},
	}
	for _, tt := range tests {
		var lines []string
		for _, l := range strings.Split(got, "\n") {
			if strings.HasPrefix(l, tt.family) {
				lines = append(lines, l)
			}
		}
		family := strings.Join(lines, "\n")
		if !strings.Contains(family, tt.other) {
			t.Errorf("%s: no series with %s:\n%s", tt.family, tt.other, family)
		}
		if tt.own != "" && !strings.Contains(family, tt.own) {
			t.Errorf("%s: the operator's own server lost its host label (%s):\n%s", tt.family, tt.own, family)
		}
	}
	for _, needle := range []string{"localhost", tenantHost, "example.com"} {
		if i := strings.Index(got, needle); i >= 0 {
			t.Errorf("client-go's metrics name the workload server (%s): ...%s...", needle, got[max(0, i-200):min(len(got), i+100)])
		}
	}
}

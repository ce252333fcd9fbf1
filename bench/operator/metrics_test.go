package main

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parse(t *testing.T, text string) metrics {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return metrics(fams)
}

func TestMetrics(t *testing.T) {
	before := parse(t, `# TYPE vitals_status_writes_total counter
vitals_status_writes_total{owner="routegc",result="written"} 3
vitals_status_writes_total{owner="routegc",result="unchanged"} 10
# TYPE d_seconds histogram
d_seconds_bucket{result="ok",le="0.1"} 1
d_seconds_bucket{result="ok",le="1"} 2
d_seconds_bucket{result="ok",le="+Inf"} 2
d_seconds_sum{result="ok"} 0.6
d_seconds_count{result="ok"} 2
`)
	after := parse(t, `# TYPE vitals_status_writes_total counter
vitals_status_writes_total{owner="routegc",result="written"} 3
vitals_status_writes_total{owner="routegc",result="unchanged"} 15
vitals_status_writes_total{owner="access",result="written"} 2
# TYPE d_seconds histogram
d_seconds_bucket{result="ok",le="0.1"} 10
d_seconds_bucket{result="ok",le="1"} 11
d_seconds_bucket{result="ok",le="+Inf"} 12
d_seconds_sum{result="ok"} 30
d_seconds_count{result="ok"} 12
d_seconds_bucket{result="error",le="0.1"} 0
d_seconds_bucket{result="error",le="1"} 0
d_seconds_bucket{result="error",le="+Inf"} 0
d_seconds_sum{result="error"} 0
d_seconds_count{result="error"} 0
`)
	got := after.deltaBy(before, "vitals_status_writes_total", "owner", "result")
	want := map[string]float64{"routegc unchanged": 5, "access written": 2}
	if len(got) != len(want) {
		t.Fatalf("deltaBy %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("deltaBy[%q] = %v, want %v", k, got[k], v)
		}
	}
	if s := after.sum("vitals_status_writes_total", map[string]string{"owner": "routegc"}); s != 18 {
		t.Errorf("sum %v, want 18", s)
	}
	if n := after.distinct("vitals_status_writes_total", "owner"); n != 2 {
		t.Errorf("distinct %d, want 2", n)
	}
	h := after.histogramDelta(before, "d_seconds")
	// 10 observations in the window: 9 up to 0.1, none more up to 1, 1 above
	for _, tc := range []struct{ q, want float64 }{{0.5, 0.1}, {0.9, 0.1}, {0.95, math.Inf(1)}, {1, math.Inf(1)}} {
		if got := h.quantile(tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestRequests(t *testing.T) {
	m0 := parse(t, `apiserver_request_total{verb="GET",resource="secrets",subresource="",code="200"} 1
apiserver_request_total{verb="GET",resource="",subresource="",code="200"} 5
`)
	m1 := parse(t, `apiserver_request_total{verb="GET",resource="secrets",subresource="",code="200"} 4
apiserver_request_total{verb="GET",resource="secrets",subresource="",code="404"} 1
apiserver_request_total{verb="APPLY",resource="vitalsclusters",subresource="status",code="200"} 7
apiserver_request_total{verb="GET",resource="",subresource="",code="200"} 6
`)
	got := requests(m0, m1)
	want := map[string]float64{"GET secrets": 4, "APPLY vitalsclusters/status": 7, "GET (non-resource)": 1}
	if len(got) != len(want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("requests[%q] = %v, want %v", k, got[k], v)
		}
	}
}

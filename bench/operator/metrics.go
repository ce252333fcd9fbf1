package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// maxScrape bounds one metrics page (at 10,000 clusters an operator's is some tens of MB).
const maxScrape = 512 << 20

// metrics is one scrape of a Prometheus text exposition: the metric families by name.
type metrics map[string]*dto.MetricFamily

// scrape reads url's metrics with hc (nil: http.DefaultClient).
func scrape(ctx context.Context, hc *http.Client, url string) (metrics, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxScrape))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return metrics(fams), nil
}

// value is a counter's, gauge's or untyped sample's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// label is the value of m's label name ("" when it has none).
func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// series are the samples of name whose labels have the values of want.
func (m metrics) series(name string, want map[string]string) []*dto.Metric {
	f := m[name]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
	for _, s := range f.GetMetric() {
		ok := true
		for k, v := range want {
			if label(s, k) != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// sum adds the values of the samples of name matching want.
func (m metrics) sum(name string, want map[string]string) float64 {
	t := 0.0
	for _, s := range m.series(name, want) {
		t += value(s)
	}
	return t
}

// has reports whether the scrape holds a family name.
func (m metrics) has(name string) bool { return m[name] != nil }

// by sums the samples of name by the values of labels (joined by a space).
func (m metrics) by(name string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m.series(name, nil) {
		out[key(s, labels)] += value(s)
	}
	return out
}

func key(s *dto.Metric, labels []string) string {
	vs := make([]string, len(labels))
	for i, l := range labels {
		vs[i] = label(s, l)
	}
	return strings.TrimSpace(strings.Join(vs, " "))
}

// deltaBy is by(name, labels...) of m less that of before, without the keys that did not change.
func (m metrics) deltaBy(before metrics, name string, labels ...string) map[string]float64 {
	out := m.by(name, labels...)
	for k, v := range before.by(name, labels...) {
		out[k] -= v
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// distinct counts the values of label l among the samples of name.
func (m metrics) distinct(name, l string) int {
	vs := map[string]bool{}
	for _, s := range m.series(name, nil) {
		vs[label(s, l)] = true
	}
	return len(vs)
}

// histogram is cumulative bucket counts by upper bound (the last +Inf).
type histogram struct {
	bounds []float64
	counts []float64
}

// histogramDelta sums the buckets of every series of the histogram name and subtracts those of before.
func (m metrics) histogramDelta(before metrics, name string) histogram {
	byBound := map[float64]float64{}
	add := func(ms metrics, sign float64) {
		for _, s := range ms.series(name, nil) {
			h := s.GetHistogram()
			if h == nil {
				continue
			}
			inf := false
			for _, b := range h.GetBucket() {
				byBound[b.GetUpperBound()] += sign * float64(b.GetCumulativeCount())
				inf = inf || math.IsInf(b.GetUpperBound(), 1)
			}
			if !inf { // the +Inf bucket is the sample count
				byBound[math.Inf(1)] += sign * float64(h.GetSampleCount())
			}
		}
	}
	add(m, 1)
	add(before, -1)
	var h histogram
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	slices.Sort(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// quantile is the upper bound of the bucket holding quantile q.
func (h histogram) quantile(q float64) float64 {
	if len(h.counts) == 0 || h.counts[len(h.counts)-1] == 0 {
		return 0
	}
	total := h.counts[len(h.counts)-1]
	for i, c := range h.counts {
		if c >= q*total {
			return h.bounds[i]
		}
	}
	return h.bounds[len(h.bounds)-1]
}

// maxBucket is the upper bound of the lowest bucket holding every observation.
func (h histogram) maxBucket() float64 { return h.quantile(1) }

// mergeMetrics is the families of a and b together (the samples of both, for sums over replicas).
func mergeMetrics(a, b metrics) metrics {
	out := metrics{}
	for _, m := range []metrics{a, b} {
		for name, f := range m {
			if out[name] == nil {
				out[name] = &dto.MetricFamily{Name: f.Name, Type: f.Type}
			}
			out[name].Metric = append(out[name].Metric, f.GetMetric()...)
		}
	}
	return out
}

package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/internal/test/benchproc"
)

// controllers are the periodic controllers whose passes the bench follows.
var controllers = []string{"routegc", "flight", "access", "cloudheal"}

// passWatch keeps, per controller, the end time of every complete pass of each VitalsCluster, read from
// the replicas' own metrics, scraped every period: vitals_<controller>_last_success_timestamp_seconds
// {vitalscluster} (the exact end of the last ok pass), or, from an operator without it (the code before
// issue 23), the increments of vitals_<controller>_passes_total{result="ok"}, timed at the scrape. The
// operator writes a cluster's status only when something changed, so the status no longer shows each pass;
// and the bench must not list every VitalsCluster every few seconds itself.
type passWatch struct {
	mu     sync.Mutex
	urls   []string
	period time.Duration
	passes map[string]map[string][]time.Time // controller -> cluster -> end times, oldest first
	counts map[string]map[string]float64     // "url controller cluster" -> last ok count (counter fallback)
	seen   map[string]bool                   // controllers with any pass seen
}

// watchPasses starts the scrapes every period; add gives them each replica's metrics URL as it starts.
func watchPasses(ctx context.Context, period time.Duration) *passWatch {
	pw := newPassWatch(period)
	go benchproc.Every(ctx, period, func() { pw.scrapeAll(ctx) })
	return pw
}

func newPassWatch(period time.Duration) *passWatch {
	pw := &passWatch{period: period, passes: map[string]map[string][]time.Time{}, counts: map[string]map[string]float64{},
		seen: map[string]bool{}}
	for _, c := range controllers {
		pw.passes[c] = map[string][]time.Time{}
	}
	return pw
}

// add makes url (a replica's /metrics) one of the scraped.
func (p *passWatch) add(url string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.urls = append(p.urls, url)
}

func (p *passWatch) scrapeAll(ctx context.Context) {
	p.mu.Lock()
	urls := slices.Clone(p.urls)
	p.mu.Unlock()
	for _, u := range urls {
		sctx, cancel := context.WithTimeout(ctx, max(p.period, time.Minute)) // a big page on a loaded machine
		m, err := scrape(sctx, nil, u)
		cancel()
		if err != nil {
			continue // a replica starting or stopping: the next scrape sees it
		}
		p.record(u, m, time.Now())
	}
}

// record adds the passes a scrape of url at now shows.
func (p *passWatch) record(url string, m metrics, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range controllers {
		if name := "vitals_" + c + "_last_success_timestamp_seconds"; m.has(name) {
			for _, s := range m.series(name, nil) {
				t := time.Unix(0, int64(value(s)*1e9))
				p.add1(c, cluster(label(s, "vitalscluster")), t)
			}
			continue
		}
		ck := url + " " + c
		if p.counts[ck] == nil {
			p.counts[ck] = map[string]float64{}
		}
		for _, s := range m.series("vitals_"+c+"_passes_total", map[string]string{"result": "ok"}) {
			name := cluster(label(s, "vitalscluster"))
			v := value(s)
			for range int(v - p.counts[ck][name]) {
				p.passes[c][name] = append(p.passes[c][name], now)
				p.seen[c] = true
			}
			p.counts[ck][name] = v
		}
	}
}

func (p *passWatch) add1(c, name string, t time.Time) {
	ts := p.passes[c][name]
	if len(ts) == 0 || ts[len(ts)-1].Before(t) {
		p.passes[c][name] = append(ts, t)
		p.seen[c] = true
	}
}

// cluster is the name of a VitalsCluster labelled "namespace/name".
func cluster(nsName string) string {
	_, name, _ := strings.Cut(nsName, "/")
	return name
}

// tracked are the controllers whose passes were seen.
func (p *passWatch) tracked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range controllers {
		if p.seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// since is, per cluster, the end times of controller c's passes at or after t.
func (p *passWatch) since(c string, t time.Time) map[string][]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]time.Time, len(p.passes[c]))
	for name, ts := range p.passes[c] {
		if i := slices.IndexFunc(ts, func(x time.Time) bool { return !x.Before(t) }); i >= 0 {
			out[name] = slices.Clone(ts[i:])
		}
	}
	return out
}

// passedAll counts the clusters that had a pass of every tracked controller at or after t.
func (p *passWatch) passedAll(t time.Time) int {
	cs := p.tracked()
	if len(cs) == 0 {
		return 0
	}
	var n int
	first := p.since(cs[0], t)
	rest := make([]map[string][]time.Time, 0, len(cs)-1)
	for _, c := range cs[1:] {
		rest = append(rest, p.since(c, t))
	}
	for name := range first {
		all := true
		for _, r := range rest {
			if len(r[name]) == 0 {
				all = false
				break
			}
		}
		if all {
			n++
		}
	}
	return n
}

// last is each cluster's last pass end time of controller c.
func (p *passWatch) lastOf(c string) map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]time.Time, len(p.passes[c]))
	for name, ts := range p.passes[c] {
		out[name] = ts[len(ts)-1]
	}
	return out
}

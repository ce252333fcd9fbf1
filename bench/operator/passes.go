package main

import (
	"context"
	"strings"
	"sync"
	"time"
)

// passWatch keeps the end time of every complete route pass of each VitalsCluster, read from the
// replicas' own metrics (vitals_routegc_last_success_timestamp_seconds{vitalscluster}), scraped every
// second: the operator writes a cluster's status only when something changed, so the status no longer
// shows each pass.
type passWatch struct {
	mu     sync.Mutex
	urls   []string
	passes map[string][]time.Time // cluster -> end times of its passes, oldest first
}

// watchPasses starts the scrapes; add gives them each replica's metrics URL as it starts.
func watchPasses(ctx context.Context) *passWatch {
	pw := &passWatch{passes: map[string][]time.Time{}}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				pw.scrapeAll(ctx)
			}
		}
	}()
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
	urls := append([]string(nil), p.urls...)
	p.mu.Unlock()
	for _, u := range urls {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := scrape(sctx, u)
		cancel()
		if err != nil {
			continue // a replica starting or stopping: the next scrape sees it
		}
		p.mu.Lock()
		for _, s := range m["vitals_routegc_last_success_timestamp_seconds"] {
			_, name, _ := strings.Cut(s.labels["vitalscluster"], "/")
			t := time.Unix(0, int64(s.value*1e9))
			ts := p.passes[name]
			if len(ts) == 0 || ts[len(ts)-1].Before(t) {
				p.passes[name] = append(ts, t)
			}
		}
		p.mu.Unlock()
	}
}

// since is, per cluster, the end times of its passes at or after t.
func (p *passWatch) since(t time.Time) map[string][]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]time.Time, len(p.passes))
	for name, ts := range p.passes {
		for i, x := range ts {
			if !x.Before(t) {
				out[name] = append([]time.Time(nil), ts[i:]...)
				break
			}
		}
	}
	return out
}

// last is each cluster's last pass end time.
func (p *passWatch) last() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]time.Time, len(p.passes))
	for name, ts := range p.passes {
		out[name] = ts[len(ts)-1]
	}
	return out
}

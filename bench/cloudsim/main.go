// Command cloudsim-bench measures the OpenStack simulator at scale: it seeds many projects, each
// with a router carrying routes, servers and volumes, serves them over real HTTP on loopback, and
// drives list calls from concurrent clients, printing latency percentiles per call and the
// memory the simulator holds.
//
//	go run ./bench/cloudsim -projects 1000 -servers 50 -volumes 50 -routes 30 -clients 8 -duration 20s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vitalsproject/vitals/internal/test/benchproc"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

type options struct {
	projects, servers, volumes, routes, clients, maxRequests int
	duration, warmup                                         time.Duration
	seed                                                     uint64
	jsonOut                                                  bool
	gogc                                                     int
}

type target struct {
	projectID, routerID, token string
}

type callKind struct {
	name string
	url  func(base string, t target) string
}

var kinds = []callKind{
	{"servers/detail?limit=50", func(b string, t target) string { return b + "/compute/v2.1/servers/detail?limit=50" }},
	{"volumes/detail?limit=50", func(b string, t target) string {
		return b + "/volume/v3/" + t.projectID + "/volumes/detail?limit=50"
	}},
	{"routers/{id}", func(b string, t target) string { return b + "/networking/v2.0/routers/" + t.routerID }},
	{"ports?limit=100", func(b string, t target) string { return b + "/networking/v2.0/ports?limit=100" }},
}

func main() {
	var o options
	flag.IntVar(&o.projects, "projects", 1000, "projects to seed")
	flag.IntVar(&o.servers, "servers", 50, "servers (each with a port) per project")
	flag.IntVar(&o.volumes, "volumes", 50, "volumes per project")
	flag.IntVar(&o.routes, "routes", 30, "routes on each project's router")
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long to measure")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before measuring")
	flag.IntVar(&o.maxRequests, "max-requests", 2_000_000, "stop after this many measured requests")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed (IDs and the choice of projects)")
	flag.BoolVar(&o.jsonOut, "json", false, "print the result as JSON")
	flag.IntVar(&o.gogc, "gogc", 0, "garbage collector target percentage (0: GOGC or Go's default of 100)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "cloudsim-bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.projects < 1 || o.clients < 1 || o.servers < 1 || o.routes > o.servers {
		return fmt.Errorf("need projects, clients, servers >= 1 and routes <= servers")
	}
	if o.gogc > 0 {
		debug.SetGCPercent(o.gogc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim, err := cloudsim.New(cloudsim.Options{Seed: o.seed})
	if err != nil {
		return err
	}
	start := time.Now()
	targets, err := seed(sim, o)
	if err != nil {
		return err
	}
	seedTime := time.Since(start)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := rssBytes()

	if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
		return err
	}
	defer sim.Close()
	base := sim.URL()
	tr := &http.Transport{MaxIdleConnsPerHost: o.clients, MaxConnsPerHost: o.clients}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	if err := issueTokens(ctx, client, base, targets); err != nil {
		return err
	}

	// Warm up, then measure.
	if _, _, err := drive(ctx, client, base, targets, o, o.warmup, o.maxRequests); err != nil {
		return err
	}
	cpu0 := cpuTime()
	lat, elapsed, err := drive(ctx, client, base, targets, o, o.duration, o.maxRequests)
	if err != nil {
		return err
	}
	cpu := cpuTime() - cpu0
	st := sim.Stats()
	res := result{Projects: o.projects, Servers: st.Servers, Volumes: st.Volumes, Ports: st.Ports, Routes: st.Routes,
		Clients: o.clients, SeedSeconds: seedTime.Seconds(), HeapInuseMiB: float64(ms.HeapInuse) / (1 << 20),
		RSSMiB: float64(rss) / (1 << 20), Seconds: elapsed.Seconds(), LoadAvg: benchproc.LoadAvg()}
	for _, k := range kinds {
		res.Calls = append(res.Calls, summarize(k.name, lat[k.name], elapsed))
	}
	var all []time.Duration
	for _, k := range kinds {
		all = append(all, lat[k.name]...)
	}
	res.Calls = append(res.Calls, summarize("all", all, elapsed))
	if len(all) > 0 {
		res.CPUPerRequestUs = float64(cpu.Microseconds()) / float64(len(all))
	}
	if o.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	res.print()
	return nil
}

// seed creates the projects: one network /24, a router attached to it with o.routes routes to
// server IPs, o.servers servers and o.volumes volumes each; one member user per project.
func seed(sim *cloudsim.Sim, o options) ([]target, error) {
	targets := make([]target, 0, o.projects)
	for i := 0; i < o.projects; i++ {
		ps := cloudsim.ScaleProject(i, o.servers, o.volumes, o.routes)
		name := ps.Name
		out, err := sim.Seed(cloudsim.SeedSpec{Projects: []cloudsim.ProjectSeed{ps}})
		if err != nil {
			return nil, err
		}
		sp := out.Projects[name]
		targets = append(targets, target{projectID: sp.ID, routerID: sp.Routers["router"]})
	}
	return targets, nil
}

func issueTokens(ctx context.Context, c *http.Client, base string, ts []target) error {
	for i := range ts {
		name := fmt.Sprintf("bench-%04d", i)
		body := `{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"` + name +
			`","domain":{"name":"Default"},"password":"pw"}}},"scope":{"project":{"name":"` + name +
			`","domain":{"name":"Default"}}}}}`
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/v3/auth/tokens", bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return fmt.Errorf("issue token for %s: %w", name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			return fmt.Errorf("issue token for %s: status %d", name, resp.StatusCode)
		}
		ts[i].token = resp.Header.Get("X-Subject-Token")
	}
	return nil
}

// drive runs o.clients workers for d (or until maxRequests), each picking a random project and
// call kind per request, and returns the latencies by call kind.
func drive(ctx context.Context, c *http.Client, base string, ts []target, o options, d time.Duration, maxRequests int) (map[string][]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	var firstErr error
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	per := maxRequests / o.clients
	start := time.Now()
	for w := 0; w < o.clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(o.seed, uint64(w)))
			local := map[string][]time.Duration{}
			for n := 0; n < per && time.Now().Before(deadline); n++ {
				t := ts[rng.IntN(len(ts))]
				k := kinds[rng.IntN(len(kinds))]
				req, _ := http.NewRequestWithContext(ctx, "GET", k.url(base, t), nil)
				req.Header.Set("X-Auth-Token", t.token)
				t0 := time.Now()
				resp, err := c.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("GET %s: status %d", req.URL, resp.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				local[k.name] = append(local[k.name], time.Since(t0))
			}
			mu.Lock()
			for k, v := range local {
				lat[k] = append(lat[k], v...)
			}
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	return lat, time.Since(start), firstErr
}

type callStats struct {
	Call   string  `json:"call"`
	Count  int     `json:"count"`
	PerSec float64 `json:"per_second"`
	P50ms  float64 `json:"p50_ms"`
	P90ms  float64 `json:"p90_ms"`
	P99ms  float64 `json:"p99_ms"`
	P999ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

type result struct {
	Projects     int     `json:"projects"`
	Servers      int     `json:"servers"`
	Volumes      int     `json:"volumes"`
	Ports        int     `json:"ports"`
	Routes       int     `json:"routes"`
	Clients      int     `json:"clients"`
	SeedSeconds  float64 `json:"seed_seconds"`
	HeapInuseMiB float64 `json:"heap_inuse_mib"`
	RSSMiB       float64 `json:"rss_mib"`
	Seconds      float64 `json:"seconds"`
	// CPUPerRequestUs is the process's CPU time (simulator and clients) per measured request.
	CPUPerRequestUs float64     `json:"cpu_per_request_us"`
	LoadAvg         string      `json:"load_average"`
	Calls           []callStats `json:"calls"`
}

func summarize(name string, d []time.Duration, elapsed time.Duration) callStats {
	s := callStats{Call: name, Count: len(d)}
	if len(d) == 0 {
		return s
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	q := func(p float64) float64 { return ms(d[min(len(d)-1, int(p*float64(len(d))))]) }
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	s.PerSec = float64(len(d)) / elapsed.Seconds()
	s.P50ms, s.P90ms, s.P99ms, s.P999ms = q(0.50), q(0.90), q(0.99), q(0.999)
	s.MaxMs = ms(d[len(d)-1])
	s.MeanMs = ms(sum / time.Duration(len(d)))
	return s
}

func (r result) print() {
	fmt.Printf("seeded %d projects: %d servers, %d ports, %d volumes, %d routes in %.1fs\n",
		r.Projects, r.Servers, r.Ports, r.Volumes, r.Routes, r.SeedSeconds)
	fmt.Printf("memory after seeding (GC'd): heap in use %.0f MiB, process RSS %.0f MiB\n", r.HeapInuseMiB, r.RSSMiB)
	fmt.Printf("%d clients for %.1fs over loopback HTTP; CPU (simulator + clients) %.0f us/request; load average %s\n",
		r.Clients, r.Seconds, r.CPUPerRequestUs, r.LoadAvg)
	fmt.Printf("%-26s %8s %8s %8s %8s %8s %8s %8s\n", "call", "count", "req/s", "p50 ms", "p90 ms", "p99 ms", "p99.9", "max ms")
	for _, c := range r.Calls {
		fmt.Printf("%-26s %8d %8.0f %8.2f %8.2f %8.2f %8.2f %8.2f\n", c.Call, c.Count, c.PerSec, c.P50ms, c.P90ms, c.P99ms, c.P999ms, c.MaxMs)
	}
}

// rssBytes reads the process's resident set size from /proc (0 where it cannot).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

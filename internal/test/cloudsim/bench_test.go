package cloudsim_test

import (
	"math/rand/v2"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

type scaleTarget struct{ project, router, token string }

var (
	scaleOnce sync.Once
	scaleSim  *cloudsim.Sim
	scaleTgts []scaleTarget
)

// scale seeds 1000 projects × (router with 30 routes, 50 servers, 50 volumes) once per run.
func scale(b *testing.B) (*cloudsim.Sim, []scaleTarget) {
	scaleOnce.Do(func() {
		sim, err := cloudsim.New(cloudsim.Options{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		h := sim.Handler()
		for i := 0; i < 1000; i++ {
			ps := cloudsim.ScaleProject(i, 50, 50, 30)
			out, err := sim.Seed(cloudsim.SeedSpec{Projects: []cloudsim.ProjectSeed{ps}})
			if err != nil {
				b.Fatal(err)
			}
			sp := out.Projects[ps.Name]
			scaleTgts = append(scaleTgts, scaleTarget{project: sp.ID, router: sp.Routers["router"],
				token: tokenFor(b, h, ps.Name, "pw", ps.Name)})
		}
		scaleSim = sim
	})
	return scaleSim, scaleTgts
}

// BenchmarkListAtScale measures the simulator's own cost of each list call (no network) with
// 1000 projects seeded; a random project per call.
func BenchmarkListAtScale(b *testing.B) {
	sim, ts := scale(b)
	h := sim.Handler()
	for _, bc := range []struct {
		name string
		path func(t scaleTarget) string
	}{
		{"servers-detail-limit50", func(t scaleTarget) string { return "/compute/v2.1/servers/detail?limit=50" }},
		{"volumes-detail-limit50", func(t scaleTarget) string { return "/volume/v3/" + t.project + "/volumes/detail?limit=50" }},
		{"router-get", func(t scaleTarget) string { return "/networking/v2.0/routers/" + t.router }},
		{"ports-limit100", func(t scaleTarget) string { return "/networking/v2.0/ports?limit=100" }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			cpu0 := cpuTime()
			n := 0
			defer func() {
				if n > 0 {
					b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/op")
				}
			}()
			for b.Loop() {
				n++
				t := ts[rng.IntN(len(ts))]
				req := httptest.NewRequest("GET", bc.path(t), nil)
				req.Header.Set("X-Auth-Token", t.token)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s = %d %s", req.URL, rec.Code, rec.Body)
				}
			}
		})
	}
}

// cpuTime is the process's user+system CPU time: steadier than wall time on a loaded machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

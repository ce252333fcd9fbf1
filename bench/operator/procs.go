package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/internal/test/benchproc"
)

// sampler reads the resident set of some processes every period: the operators, the kube-apiserver and
// etcd, the workload cluster's, the simulator.
type sampler struct {
	mu      sync.Mutex
	pids    map[string]int
	samples map[string][]rssSample
}

type rssSample struct {
	at  time.Time
	mib float64
}

// stat is what the samples of one process in a time range show.
type stat struct {
	Avg float64 `json:"avg"`
	Max float64 `json:"max"`
	// Last is the last sample of the range.
	Last float64 `json:"last"`
}

func startSampler(ctx context.Context, period time.Duration) *sampler {
	s := &sampler{pids: map[string]int{}, samples: map[string][]rssSample{}}
	go benchproc.Every(ctx, period, s.sample)
	return s
}

// watch samples pid as name from now on (pid 0: nothing).
func (s *sampler) watch(name string, pid int) {
	if pid <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pids[name] = pid
}

func (s *sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for name, pid := range s.pids {
		if v := benchproc.RSS(pid); v > 0 {
			s.samples[name] = append(s.samples[name], rssSample{now, v})
		}
	}
}

// now samples name once and returns the value (0: unknown).
func (s *sampler) now(name string) float64 {
	s.mu.Lock()
	pid := s.pids[name]
	s.mu.Unlock()
	return benchproc.RSS(pid)
}

// between is what name's samples from t0 to t1 show.
func (s *sampler) between(name string, t0, t1 time.Time) stat {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st stat
	n := 0
	for _, x := range s.samples[name] {
		if x.at.Before(t0) || x.at.After(t1) {
			continue
		}
		st.Avg += x.mib
		st.Max = max(st.Max, x.mib)
		st.Last = x.mib
		n++
	}
	if n > 0 {
		st.Avg /= float64(n)
	}
	return st
}

// cpu is name's user+system CPU time in seconds (0: unknown).
func (s *sampler) cpu(name string) float64 {
	s.mu.Lock()
	pid := s.pids[name]
	s.mu.Unlock()
	return benchproc.CPUSeconds(pid)
}

// names are the processes sampled.
func (s *sampler) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.pids))
	for n := range s.pids {
		out = append(out, n)
	}
	return out
}

// readPIDFile is the process ID written in path ("" or unreadable: 0).
func readPIDFile(path string) int {
	if path == "" {
		return 0
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

package remediation

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// CheckSet is the in-memory Checks of one operator.
type CheckSet struct {
	clock clock.PassiveClock

	mu      sync.RWMutex
	results map[types.NamespacedName]map[string]CheckResult
}

var _ Checks = (*CheckSet)(nil)

// NewChecks returns an empty CheckSet; results are stamped with clk (nil: the real clock).
func NewChecks(clk clock.PassiveClock) *CheckSet {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &CheckSet{clock: clk, results: map[types.NamespacedName]map[string]CheckResult{}}
}

// Set records the latest result of one check of a cluster (err nil: passing).
func (s *CheckSet) Set(cluster types.NamespacedName, check string, err error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.results[cluster]
	if m == nil {
		m = map[string]CheckResult{}
		s.results[cluster] = m
	}
	r := CheckResult{Err: err, Time: now, LastFailure: m[check].LastFailure, LastErr: m[check].LastErr}
	if IsOutage(err) {
		r.LastFailure, r.LastErr = now, err.Error()
	}
	m[check] = r
}

// Get returns the latest result; ok is false when the check never reported.
func (s *CheckSet) Get(cluster types.NamespacedName, check string) (CheckResult, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.results[cluster][check]
	return r, ok
}

// Forget drops every check of a cluster.
func (s *CheckSet) Forget(cluster types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.results, cluster)
}

package cloudsim

import (
	"container/heap"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// cloud is the store of the resources of Neutron, Nova, Cinder and Octavia, shared by their handlers under one
// lock: their changes cross services and must be atomic (a server comes and goes with its ports, a load
// balancer with its VIP port). Projects belong to identity; a handler holding mu may ask identity (the lock
// order is cloud, then identity; identity never calls back).
type cloud struct {
	*core
	id *identity

	mu      sync.RWMutex                 // guards st, ipIndex, events
	st      *state                       // the resources
	ipIndex map[string]map[string]string // subnet ID -> IP -> port ID
	events  eventHeap
	nextDue atomic.Int64 // unix nanos of the earliest pending transition
}

func newCloud(co *core, id *identity) *cloud {
	c := &cloud{core: co, id: id, st: newState(), ipIndex: map[string]map[string]string{}}
	c.nextDue.Store(math.MaxInt64)
	return c
}

// Pending state transitions: a min-heap of due times.

type eventKind uint8

const (
	evServer eventKind = iota + 1
	evVolume
	evLB
	evSnapshot
)

type event struct {
	at   time.Time
	kind eventKind
	id   string
}

type eventHeap []event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// schedule records a transition due at at. Callers hold s.mu for writing.
func (s *cloud) schedule(at time.Time, kind eventKind, id string) {
	heap.Push(&s.events, event{at: at, kind: kind, id: id})
	if n := at.UnixNano(); n < s.nextDue.Load() {
		s.nextDue.Store(n)
	}
}

// advance applies the transitions that are due. It is cheap when none is.
func (s *cloud) advance() {
	now := s.clock.Now()
	if now.UnixNano() < s.nextDue.Load() {
		return
	}
	s.mu.Lock()
	s.advanceLocked(now)
	s.mu.Unlock()
}

func (s *cloud) advanceLocked(now time.Time) {
	for len(s.events) > 0 && !s.events[0].at.After(now) {
		e := heap.Pop(&s.events).(event)
		s.apply(e)
	}
	if len(s.events) > 0 {
		s.nextDue.Store(s.events[0].at.UnixNano())
	} else {
		s.nextDue.Store(math.MaxInt64)
	}
}

// apply finishes the change an event is for, in the file of its service.
func (s *cloud) apply(e event) {
	switch e.kind {
	case evServer:
		settle(s.st.servers, e, s.settleServer)
	case evVolume:
		settle(s.st.volumes, e, s.settleVolume)
	case evSnapshot:
		settle(s.st.snapshots, e, s.settleSnapshot)
	case evLB:
		settle(s.st.lbs, e, s.settleLB)
	}
}

// The handlers of the services other than Keystone, over the shared store.
type (
	neutron struct{ *cloud }
	nova    struct{ *cloud }
	cinder  struct{ *cloud }
	octavia struct{ *cloud }
)

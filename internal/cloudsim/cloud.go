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

func (s *cloud) apply(e event) {
	now := s.now()
	switch e.kind {
	case evServer:
		v, ok := s.st.servers.get(e.id)
		if !ok || !v.Due.Equal(e.at) {
			return
		}
		v.Due = time.Time{}
		if v.TaskState == "deleting" {
			s.removeServerLocked(v)
			return
		}
		v.Status, v.VMState, v.TaskState, v.Updated = "ACTIVE", "active", "", now
	case evVolume:
		v, ok := s.st.volumes.get(e.id)
		if !ok || !v.Due.Equal(e.at) {
			return
		}
		v.Due = time.Time{}
		switch v.Status {
		case "deleting":
			s.st.volumes.del(v.ID)
		case "creating":
			v.Status, v.Updated = "available", now
		}
	case evLB:
		v, ok := s.st.lbs.get(e.id)
		if !ok || !v.Due.Equal(e.at) {
			return
		}
		v.Due = time.Time{}
		switch v.ProvisioningStatus {
		case "PENDING_DELETE":
			s.removeLBLocked(v)
		default:
			v.ProvisioningStatus, v.OperatingStatus, v.Updated = "ACTIVE", "ONLINE", now
		}
	}
}

// removeServerLocked deletes a server and the ports Nova made for it.
func (s *cloud) removeServerLocked(v *server) {
	for _, pid := range v.Ports {
		if p, ok := s.st.ports.get(pid); ok && p.DeviceID == v.ID {
			s.releaseIPsLocked(p)
			s.st.ports.del(pid)
		}
	}
	for _, id := range s.st.volumes.ids(v.Project) {
		if vol := s.st.volumes.m[id]; vol.AttachedTo == v.ID {
			vol.AttachedTo, vol.Status = "", "available"
		}
	}
	s.st.servers.del(v.ID)
}

func (s *cloud) removeLBLocked(v *loadBalancer) {
	if p, ok := s.st.ports.get(v.VIPPortID); ok {
		s.releaseIPsLocked(p)
		s.st.ports.del(p.ID)
	}
	s.st.lbs.del(v.ID)
}

// The handlers of the services other than Keystone, over the shared store.
type (
	neutron struct{ *cloud }
	nova    struct{ *cloud }
	cinder  struct{ *cloud }
	octavia struct{ *cloud }
)

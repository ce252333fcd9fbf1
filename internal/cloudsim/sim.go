package cloudsim

import (
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Service names, as used in faults and in the catalog.
const (
	svcIdentity = "identity"
	svcNetwork  = "network"
	svcCompute  = "compute"
	svcVolume   = "volume"
	svcLB       = "load-balancer"
)

// DefaultDomainID is the ID of the only domain, named "Default".
const (
	DefaultDomainID   = "default"
	DefaultDomainName = "Default"
)

// Options configure a simulator. The zero value works: real clock, a random seed, no admin.
type Options struct {
	// Clock gives the time of tokens, timestamps and state transitions (default: the real clock).
	Clock clock.Clock
	// Rand is the source of IDs, MAC addresses and token IDs. Nil: a PCG seeded with Seed.
	Rand rand.Source
	// Seed seeds the default random source; 0 picks a seed from the real clock.
	Seed uint64
	// Logger receives the simulator's logs (default: discarded).
	Logger *slog.Logger
	// Region is the catalog's region (default "RegionOne").
	Region string
	// PublicURL is the base URL written in the catalog. Empty: the URL Start listens on, or
	// the Host of each request when only Handler is used (httptest).
	PublicURL string
	// Knobs are the initial behaviour knobs (zero: DefaultKnobs()).
	Knobs *Knobs
	// StatePath, when set, is a JSON file loaded by New (if it exists) and written on
	// Close, on Save and every SaveInterval while Start runs.
	StatePath string
	// SaveInterval is how often Start saves the state to StatePath (default 1 minute).
	SaveInterval time.Duration
}

// Sim is a running OpenStack simulator. All methods are safe for concurrent use.
type Sim struct {
	clock clock.Clock
	log   *slog.Logger
	opts  Options

	mu      sync.RWMutex // guards st, rng, knobs, events
	st      *state
	ipIndex map[string]map[string]string // subnet ID -> IP -> port ID
	rng     *rand.Rand
	src     rand.Source
	knobs   Knobs
	events  eventHeap
	nextDue atomic.Int64 // unix nanos of the earliest pending transition

	fmu    sync.Mutex
	faults []*Fault

	handler http.Handler
	baseURL atomic.Value // string

	srvMu sync.Mutex
	srv   *http.Server
	done  chan struct{}
}

// New builds a simulator. It fails only when Options.StatePath names a file that cannot be read.
func New(opts Options) (*Sim, error) {
	s := &Sim{opts: opts, clock: opts.Clock, log: opts.Logger, st: newState(), ipIndex: map[string]map[string]string{}}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.Region == "" {
		s.opts.Region = "RegionOne"
	}
	if s.opts.SaveInterval <= 0 {
		s.opts.SaveInterval = time.Minute
	}
	s.src = opts.Rand
	if s.src == nil {
		seed := opts.Seed
		if seed == 0 {
			seed = uint64(s.clock.Now().UnixNano())
		}
		s.src = rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	}
	s.rng = rand.New(s.src)
	s.knobs = DefaultKnobs()
	if opts.Knobs != nil {
		if err := opts.Knobs.validate(); err != nil {
			return nil, fmt.Errorf("cloudsim knobs: %w", err)
		}
		s.knobs = *opts.Knobs
	}
	s.nextDue.Store(math.MaxInt64)
	s.baseURL.Store(strings.TrimRight(opts.PublicURL, "/"))
	if opts.StatePath != "" {
		if err := s.load(opts.StatePath); err != nil {
			return nil, err
		}
	}
	s.handler = s.routes()
	return s, nil
}

// Handler serves every simulated service and the admin API under /_sim/.
func (s *Sim) Handler() http.Handler { return s.handler }

// URL is the base URL of the simulator ("http://127.0.0.1:PORT"), once Start listens or when
// Options.PublicURL is set; empty otherwise.
func (s *Sim) URL() string { return s.baseURL.Load().(string) }

// AuthURL is the Keystone v3 URL clients authenticate against.
func (s *Sim) AuthURL() string { return s.URL() + "/v3" }

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until ctx ends or Close
// is called. It returns once the listener is open.
func (s *Sim) Start(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cloudsim listen on %s: %w", addr, err)
	}
	if s.opts.PublicURL == "" {
		s.baseURL.Store("http://" + ln.Addr().String())
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.srvMu.Lock()
	s.srv = srv
	s.done = make(chan struct{})
	done := s.done
	s.srvMu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve failed", "addr", addr, "err", err)
		}
	}()
	go func() {
		var tick <-chan time.Time
		for {
			if s.opts.StatePath != "" {
				tick = s.clock.After(s.opts.SaveInterval)
			}
			select {
			case <-ctx.Done():
				if err := s.Close(); err != nil {
					s.log.Error("close failed", "err", err)
				}
				return
			case <-done:
				return
			case <-tick:
				if err := s.Save(); err != nil {
					s.log.Error("periodic save failed", "path", s.opts.StatePath, "err", err)
				}
			}
		}
	}()
	s.log.Info("cloudsim listening", "url", s.URL())
	return nil
}

// Close stops the server started by Start (waiting up to 5 s for calls in flight) and saves
// the state when Options.StatePath is set.
func (s *Sim) Close() error {
	s.srvMu.Lock()
	srv, done := s.srv, s.done
	s.srv, s.done = nil, nil
	s.srvMu.Unlock()
	var errs []error
	if srv != nil {
		close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cloudsim shutdown: %w", err))
		}
	}
	if s.opts.StatePath != "" {
		if err := s.Save(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Knobs returns the current behaviour knobs.
func (s *Sim) Knobs() Knobs {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.knobs
}

// SetKnobs replaces the behaviour knobs.
func (s *Sim) SetKnobs(k Knobs) error {
	if err := k.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.knobs = k
	s.mu.Unlock()
	return nil
}

// UpdateKnobs changes the knobs with f under the simulator's lock.
func (s *Sim) UpdateKnobs(f func(*Knobs)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.knobs
	f(&k)
	if err := k.validate(); err != nil {
		return err
	}
	s.knobs = k
	return nil
}

// AddFault installs a fault and returns its ID.
func (s *Sim) AddFault(f Fault) (string, error) {
	if err := f.compile(); err != nil {
		return "", fmt.Errorf("fault: %w", err)
	}
	s.mu.Lock()
	f.ID = s.newHex(8)
	s.mu.Unlock()
	f.Hits = 0
	s.fmu.Lock()
	s.faults = append(s.faults, &f)
	s.fmu.Unlock()
	return f.ID, nil
}

// RemoveFault removes one fault; it reports whether it existed.
func (s *Sim) RemoveFault(id string) bool {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	for i, f := range s.faults {
		if f.ID == id {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			return true
		}
	}
	return false
}

// ClearFaults removes every fault.
func (s *Sim) ClearFaults() {
	s.fmu.Lock()
	s.faults = nil
	s.fmu.Unlock()
}

// Faults returns the installed faults with their hit counts.
func (s *Sim) Faults() []Fault {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	out := make([]Fault, 0, len(s.faults))
	for _, f := range s.faults {
		c := *f
		c.re = nil
		out = append(out, c)
	}
	return out
}

// matchFault finds the first fault that applies to a call, counting it.
func (s *Sim) matchFault(service, method, path, rawQuery string) *Fault {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	for _, f := range s.faults {
		if !f.matches(service, method, path, rawQuery) {
			continue
		}
		if f.Skip > 0 {
			f.Skip--
			continue
		}
		if f.Times > 0 && f.Hits >= f.Times {
			continue
		}
		f.Hits++
		c := *f
		return &c
	}
	return nil
}

// sleep waits d on the simulator's clock, or until ctx ends.
func (s *Sim) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-s.clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newUUID returns a random UUID (version 4). Callers hold s.mu for writing.
func (s *Sim) newUUID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], s.rng.Uint64())
	binary.BigEndian.PutUint64(b[8:], s.rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newHex returns n random bytes in hex. Callers hold s.mu for writing.
func (s *Sim) newHex(n int) string {
	b := make([]byte, 0, n+8)
	for len(b) < n {
		b = binary.BigEndian.AppendUint64(b, s.rng.Uint64())
	}
	return hex.EncodeToString(b[:n])
}

// newMAC returns an OpenStack-style MAC address. Callers hold s.mu for writing.
func (s *Sim) newMAC() string {
	v := s.rng.Uint64()
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(v), byte(v>>8), byte(v>>16))
}

// now is the simulator's time, truncated to microseconds like the services' databases.
func (s *Sim) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

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
func (s *Sim) schedule(at time.Time, kind eventKind, id string) {
	heap.Push(&s.events, event{at: at, kind: kind, id: id})
	if n := at.UnixNano(); n < s.nextDue.Load() {
		s.nextDue.Store(n)
	}
}

// advance applies the transitions that are due. It is cheap when none is.
func (s *Sim) advance() {
	now := s.clock.Now()
	if now.UnixNano() < s.nextDue.Load() {
		return
	}
	s.mu.Lock()
	s.advanceLocked(now)
	s.mu.Unlock()
}

func (s *Sim) advanceLocked(now time.Time) {
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

func (s *Sim) apply(e event) {
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
func (s *Sim) removeServerLocked(v *server) {
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

func (s *Sim) removeLBLocked(v *loadBalancer) {
	if p, ok := s.st.ports.get(v.VIPPortID); ok {
		s.releaseIPsLocked(p)
		s.st.ports.del(p.ID)
	}
	s.st.lbs.del(v.ID)
}

package cloudsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	// RequestLog receives a JSON line per API call (Request), the admin API aside (nil: none).
	RequestLog io.Writer
}

// Sim is a running OpenStack simulator. All methods are safe for concurrent use.
//
// It is made of one part per service: identity (Keystone, with its own lock: every call of every service
// validates a token there), and neutron, nova, cinder and octavia, the handlers of the other services. Those
// four share the store of cloud resources (cloud, one lock), because their changes cross services and must be
// atomic: a server comes and goes with its Neutron ports, a load balancer with its VIP port, a route is checked
// against the router's subnets. The clock, the random source, the knobs and the faults (core) have locks of
// their own.
type Sim struct {
	*cloud
	opts Options

	id      *identity
	neutron *neutron
	nova    *nova
	cinder  *cinder
	octavia *octavia

	handler  http.Handler
	baseURL  atomic.Value // string
	requests atomic.Int64 // API calls served
	reqLog   *requestLog

	srvMu sync.Mutex
	srv   *http.Server
	done  chan struct{}
}

// New builds a simulator. It fails only when Options.StatePath names a file that cannot be read.
func New(opts Options) (*Sim, error) {
	co := &core{clock: opts.Clock, log: opts.Logger}
	if co.clock == nil {
		co.clock = clock.RealClock{}
	}
	if co.log == nil {
		co.log = slog.New(slog.DiscardHandler)
	}
	if opts.Region == "" {
		opts.Region = "RegionOne"
	}
	if opts.SaveInterval <= 0 {
		opts.SaveInterval = time.Minute
	}
	co.src = opts.Rand
	if co.src == nil {
		seed := opts.Seed
		if seed == 0 {
			seed = uint64(co.clock.Now().UnixNano())
		}
		co.src = rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	}
	co.rng = rand.New(co.src)
	co.knobs = DefaultKnobs()
	if opts.Knobs != nil {
		if err := opts.Knobs.validate(); err != nil {
			return nil, fmt.Errorf("cloudsim knobs: %w", err)
		}
		co.knobs = *opts.Knobs
	}
	id := newIdentity(co, opts.Region)
	cl := newCloud(co, id)
	s := &Sim{cloud: cl, opts: opts, id: id, neutron: &neutron{cl}, nova: &nova{cl}, cinder: &cinder{cl},
		octavia: &octavia{cl}}
	s.reqLog = newRequestLog(opts.RequestLog)
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
func (s *Sim) Knobs() Knobs { return s.knob() }

// SetKnobs replaces the behaviour knobs.
func (s *Sim) SetKnobs(k Knobs) error {
	return s.UpdateKnobs(func(cur *Knobs) { *cur = k })
}

// UpdateKnobs changes the knobs with f under the knobs' lock.
func (s *Sim) UpdateKnobs(f func(*Knobs)) error {
	s.kmu.Lock()
	defer s.kmu.Unlock()
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
	f.ID = s.newHex(8)
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

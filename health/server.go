package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults of the Server's limits. A probe is one small request that the manager answers from its
// cache in microseconds, so every limit can be tight; the connection cap leaves room for the
// kubelet's probes, a few scrapers and an operator with curl.
const (
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultMaxConnections    = 128
)

// ServerOptions configure a Server. A zero duration or size takes the default; a negative one
// turns that limit off (not advised: it is what lets idle or slow clients pile up).
type ServerOptions struct {
	// Name of the server in logs and errors (default "health").
	Name string
	// Addr is the listen address, host:port, used when Listener is nil.
	Addr string
	// Listener is served instead of listening on Addr (tests, an inherited socket).
	Listener net.Listener
	// Manager's probe paths are served, and drained on shutdown (nil: no probe paths, as for a
	// metrics-only server).
	Manager *Manager
	// Probes configure the probe handler; Port defaults to the listener's port.
	Probes HandlerOptions
	// Handlers, when set, adds handlers beside the probes: it is called once, with Probes as the probe
	// handler gets them (Port filled in), and returns handlers by path, such as package health/oslo's
	// oslo.middleware application on /healthcheck. A path of the probes or /metrics is refused.
	Handlers func(probes HandlerOptions) map[string]http.Handler
	// Metrics, when set, is served on /metrics.
	Metrics prometheus.Gatherer
	// Logger (default slog.Default()).
	Logger *slog.Logger

	// ShutdownTimeout bounds the wait for in-flight requests after the drain.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout bounds the reading of a request's headers (a slow-header client is cut).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request.
	ReadTimeout time.Duration
	// WriteTimeout bounds the writing of a response (a client that does not read is cut).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request for this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes limits the size of a request's headers (a larger request gets 431).
	MaxHeaderBytes int
	// MaxConnections caps the open connections. At the cap a new connection evicts the one that
	// has waited longest without a request in progress (idle, or still sending its headers); when
	// every connection is busy, the new one is closed. Idle and slow clients therefore never lock
	// out the kubelet's next probe, and memory stays bounded.
	MaxConnections int
}

// Server serves a Manager's probes (and /metrics) over HTTP with the limits above, and drains on
// shutdown: readiness fails at once, liveness keeps passing for the manager's drain delay, then
// in-flight requests get ShutdownTimeout to finish. It is a controller-runtime Runnable that does
// not need leader election (Start, NeedLeaderElection), so an operator adds it to its manager;
// other programs call Start themselves.
//
// The Server neither starts nor stops the Manager's checks: its owner does, so that the checks
// keep running through the drain.
type Server struct {
	opts ServerOptions
	ln   *limitListener
	srv  *http.Server
	mux  *http.ServeMux
	log  *slog.Logger
}

// NewServer listens (so that a port in use fails at once and Addr is known) and builds the server;
// nothing is served until Start. Close releases the listener of a server never started.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Name == "" {
		opts.Name = "health"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.ShutdownTimeout = orDefault(opts.ShutdownTimeout, DefaultShutdownTimeout)
	opts.ReadHeaderTimeout = orDefault(opts.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	opts.ReadTimeout = orDefault(opts.ReadTimeout, DefaultReadTimeout)
	opts.WriteTimeout = orDefault(opts.WriteTimeout, DefaultWriteTimeout)
	opts.IdleTimeout = orDefault(opts.IdleTimeout, DefaultIdleTimeout)
	opts.MaxHeaderBytes = orDefault(opts.MaxHeaderBytes, DefaultMaxHeaderBytes)
	opts.MaxConnections = orDefault(opts.MaxConnections, DefaultMaxConnections)
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return nil, fmt.Errorf("%s server: listen on %s: %w", opts.Name, opts.Addr, err)
		}
	}
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	s.ln = newLimitListener(ln, max(opts.MaxConnections, 0), func(n int) {
		s.log.Warn("health server at its connection cap: evicting idle connections",
			"server", opts.Name, "max_connections", n)
	})
	if opts.Metrics != nil {
		s.mux.Handle("/metrics", promhttp.HandlerFor(opts.Metrics, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}))
	}
	hopts := opts.Probes
	if a, ok := ln.Addr().(*net.TCPAddr); ok && hopts.Port == 0 {
		hopts.Port = a.Port
	}
	if opts.Manager != nil {
		s.mux.Handle("/", opts.Manager.Handler(hopts))
	}
	if opts.Handlers != nil {
		for path, h := range opts.Handlers(hopts) {
			if _, _, ok := route(path); ok || path == "/metrics" || !strings.HasPrefix(path, "/") {
				_ = ln.Close()
				return nil, fmt.Errorf("%s server: handler path %q: expected an absolute path that is not a probe's or /metrics", opts.Name, path)
			}
			s.mux.Handle(path, h)
		}
	}
	s.srv = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: max(opts.ReadHeaderTimeout, 0),
		ReadTimeout:       max(opts.ReadTimeout, 0),
		WriteTimeout:      max(opts.WriteTimeout, 0),
		IdleTimeout:       max(opts.IdleTimeout, 0),
		MaxHeaderBytes:    max(opts.MaxHeaderBytes, 0),
		ConnState:         s.ln.track,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

func orDefault[T time.Duration | int](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Name is the server's name in logs and errors.
func (s *Server) Name() string { return s.opts.Name }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Handler is what the server serves: the probe paths and /metrics.
func (s *Server) Handler() http.Handler { return s.mux }

// NeedLeaderElection is false: every replica answers its probes.
func (s *Server) NeedLeaderElection() bool { return false }

// Close releases the listener of a server that was never started.
func (s *Server) Close() error { return s.ln.Close() }

// Start serves until ctx is done, then drains and shuts down. It returns nil after a clean
// shutdown, and an error when serving fails or in-flight requests outlive ShutdownTimeout.
func (s *Server) Start(ctx context.Context) error {
	name, addr := s.opts.Name, s.ln.Addr().String()
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	s.log.Info("health server listening", "server", name, "addr", addr,
		"read_header_timeout", s.opts.ReadHeaderTimeout, "idle_timeout", s.opts.IdleTimeout,
		"max_connections", s.opts.MaxConnections)
	select {
	case err := <-errc:
		return fmt.Errorf("%s server on %s: %w", name, addr, err)
	case <-ctx.Done():
	}
	if m := s.opts.Manager; m != nil {
		s.log.Info("draining: readiness fails now, liveness holds", "server", name,
			"drain_delay", m.drainDelay)
		<-m.Drain()
	}
	sctx, cancel := context.WithCancel(context.Background())
	if s.opts.ShutdownTimeout > 0 {
		sctx, cancel = context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	}
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
		<-errc
		return fmt.Errorf("%s server on %s: shut down: %w", name, addr, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s server on %s: %w", name, addr, err)
	}
	s.log.Info("health server stopped", "server", name, "addr", addr)
	return nil
}

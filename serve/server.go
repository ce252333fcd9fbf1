package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vitalsproject/vitals/health"
)

// Options are what Run takes besides the config.
type Options struct {
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Listener, when set, is served instead of listening on cfg.Listen (tests).
	Listener net.Listener
	// Ready, when set, is called with the address served once the server accepts connections.
	Ready func(addr net.Addr)
}

// HealthChecks turns the validated config into health checks.
func (c *Config) HealthChecks() []health.Check {
	out := make([]health.Check, 0, len(c.Checks))
	for i := range c.Checks {
		ch := &c.Checks[i]
		probes, _ := ch.probes()
		sev, _ := ch.severity()
		out = append(out, health.Check{
			Name:             ch.Name,
			Probes:           probes,
			Run:              health.Func(ch.run),
			Interval:         ch.Interval,
			Timeout:          ch.Timeout,
			FailureThreshold: ch.FailureThreshold,
			SuccessThreshold: ch.SuccessThreshold,
			StartPeriod:      ch.StartPeriod,
			Severity:         sev,
		})
	}
	return out
}

// Run serves the config's checks until ctx is done, then drains: readiness fails at once,
// liveness keeps passing for the drain delay, in-flight requests finish (bounded by the shutdown
// timeout), and the checks stop. It returns nil after a clean drain.
func Run(ctx context.Context, cfg *Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, w := range cfg.Warnings {
		log.Warn("configuration to update", "warning", w)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mopts := []health.Option{
		health.WithLogger(log),
		health.WithRegisterer(reg),
		health.WithDrainDelay(cfg.DrainDelay),
	}
	if cfg.KubernetesMetricNames {
		mopts = append(mopts, health.WithKubernetesMetricNames())
	}
	m := health.NewManager(mopts...)
	if err := m.Register(cfg.HealthChecks()...); err != nil {
		return fmt.Errorf("register checks from %s: %w", cfg.File, err)
	}

	ln := opts.Listener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
		}
	}
	port := 0
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}

	mux := http.NewServeMux()
	if cfg.MetricsEnabled() {
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	}
	mux.Handle("/", m.Handler(health.HandlerOptions{
		Details:            cfg.Details,
		OsloDetailed:       cfg.HealthcheckDetailed,
		DisableByFilePath:  cfg.DisableByFilePath,
		DisableByFilePaths: cfg.DisableByFilePaths,
		EnableByFilePaths:  cfg.EnableByFilePaths,
		Port:               port,
	}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	// The checks outlive ctx: they keep answering during the drain.
	m.Start(context.Background())
	defer m.Stop()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("serving health checks", "addr", ln.Addr().String(), "checks", len(cfg.Checks), "config", cfg.File,
		"metrics", cfg.MetricsEnabled(), "details", cfg.Details, "drain_delay", cfg.DrainDelay)
	if opts.Ready != nil {
		opts.Ready(ln.Addr())
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	log.Info("draining: readiness fails now, liveness holds", "drain_delay", cfg.DrainDelay)
	<-m.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shut down server on %s: %w", ln.Addr(), err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	}
	log.Info("stopped")
	return nil
}

package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/health/oslo"
	"github.com/vitalsproject/vitals/internal/base/buildinfo"
	"github.com/vitalsproject/vitals/internal/base/version"
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
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildinfo.Collector(version.Get()))
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

	srv, err := health.NewServer(health.ServerOptions{
		Name:     "serve",
		Addr:     cfg.Listen,
		Listener: opts.Listener,
		Manager:  m,
		Probes: health.HandlerOptions{
			Details:            cfg.Details,
			DisableByFilePath:  cfg.DisableByFilePath,
			DisableByFilePaths: cfg.DisableByFilePaths,
			EnableByFilePaths:  cfg.EnableByFilePaths,
		},
		// oslo.middleware's healthcheck application, from readiness, with the same gate and details.
		Handlers: func(probes health.HandlerOptions) map[string]http.Handler {
			return map[string]http.Handler{oslo.Path: oslo.Handler(m, oslo.Options{Probes: probes, Detailed: cfg.HealthcheckDetailed})}
		},
		Metrics:           metricsOf(cfg, reg),
		Logger:            log,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		MaxConnections:    cfg.MaxConnections,
	})
	if err != nil {
		return err
	}

	// Whatever an exec check's command leaves behind, in whatever group or session, is
	// reparented here, killed and reaped; at the end, after the checks stopped, every descendant.
	if cfg.hasExec() {
		reaper, err := checks.StartReaper(0)
		if err != nil {
			return err
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
			defer cancel()
			if n := reaper.Stop(rctx); n > 0 {
				log.Info("killed what exec checks left running", "processes", n)
			}
		}()
	}

	// The checks outlive ctx: they keep answering during the drain.
	m.Start(context.Background())
	defer m.Stop()

	log.Info("serving health checks", "addr", srv.Addr().String(), "checks", len(cfg.Checks), "config", cfg.File,
		"metrics", cfg.MetricsEnabled(), "details", cfg.Details, "drain_delay", cfg.DrainDelay)
	if opts.Ready != nil {
		opts.Ready(srv.Addr())
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// reapTimeout bounds the kill and reaping of the exec checks' descendants at exit.
const reapTimeout = 5 * time.Second

// hasExec reports whether a check runs commands.
func (c *Config) hasExec() bool {
	for i := range c.Checks {
		if c.Checks[i].Type == "exec" {
			return true
		}
	}
	return false
}

// metricsOf is what /metrics serves: reg, or nothing when metrics are off.
func metricsOf(cfg *Config, reg *prometheus.Registry) prometheus.Gatherer {
	if !cfg.MetricsEnabled() {
		return nil
	}
	return reg
}

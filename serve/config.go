package serve

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// DefaultListen is the listen address when the config and the flags name none.
const DefaultListen = ":8080"

// Config is the YAML configuration of `vitals serve`.
type Config struct {
	// Listen is the address of the HTTP server, host:port (":8080" when empty).
	Listen string `yaml:"listen"`
	// Details shows failure reasons in aggregate endpoints and JSON.
	Details bool `yaml:"details"`
	// HealthcheckDetailed answers /healthcheck in oslo.middleware's detailed mode.
	HealthcheckDetailed bool `yaml:"healthcheck_detailed"`
	// DrainDelay: after SIGTERM readiness fails at once and liveness passes for this long.
	DrainDelay time.Duration `yaml:"drain_delay"`
	// ShutdownTimeout bounds the wait for in-flight requests after the drain (default 10s).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Metrics serves Prometheus metrics on /metrics (default true).
	Metrics *bool `yaml:"metrics"`
	// KubernetesMetricNames also exports the apiserver's kubernetes_healthcheck metric names.
	KubernetesMetricNames bool `yaml:"kubernetes_metric_names"`
	// DisableByFilePath: every probe answers 503 while this file exists (oslo.middleware).
	DisableByFilePath string `yaml:"disable_by_file_path"`
	// DisableByFilePaths: "port:path" pairs, as oslo.middleware's disable_by_file_paths.
	DisableByFilePaths []string `yaml:"disable_by_file_paths"`
	// EnableByFilePaths: "port:path" pairs; the server is disabled unless the file exists.
	EnableByFilePaths []string `yaml:"enable_by_file_paths"`
	// Limits of the HTTP server (absent or 0: the defaults of health.ServerOptions).
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `yaml:"read_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	MaxHeaderBytes    int           `yaml:"max_header_bytes"`
	MaxConnections    int           `yaml:"max_connections"`
	// Checks to run.
	Checks []CheckConfig `yaml:"checks" config:"required"`

	// File is the path the config was read from (for errors).
	File string `yaml:"-"`
	// Warnings found while validating (deprecated spellings), "file:line: field: text"; Run logs
	// each once.
	Warnings []string `yaml:"-"`
	// Self is the document's root mapping node (for error locations).
	Self yaml.Node `yaml:",node"`
}

// CheckConfig is one entry of checks: the fields every check has, plus the parameters of its type
// (in Params, decoded by the type's factory).
type CheckConfig struct {
	Name             string        `yaml:"name" config:"required"`
	Type             string        `yaml:"type" config:"required"`
	Probes           []string      `yaml:"probes"`
	Interval         time.Duration `yaml:"interval"`
	Timeout          time.Duration `yaml:"timeout"`
	FailureThreshold int           `yaml:"failure_threshold"`
	SuccessThreshold int           `yaml:"success_threshold"`
	StartPeriod      time.Duration `yaml:"start_period"`
	// Severity: critical (default) or degraded.
	Severity string `yaml:"severity"`

	// Params holds the type's own keys.
	Params yaml.Node `yaml:",remain"`
	// Self is the entry's mapping node (for error locations).
	Self yaml.Node `yaml:",node"`

	run checks.Func // built by validate
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Load reads, decodes and validates the config file at path. Every error found is returned
// (as config.Errors, each with file, line, field and what was expected).
func Load(path string) (*Config, error) {
	data, err := bounded.ReadFile(context.Background(), path, bounded.ConfigSize)
	if err != nil {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("read config: %v", err), Err: err}
	}
	return Parse(path, data)
}

// Parse is Load on data already read; file names it in errors.
func Parse(file string, data []byte) (*Config, error) {
	if err := notAMapping(file, data); err != nil {
		return nil, err
	}
	var c Config
	if err := config.DecodeYAML(file, data, &c); err != nil {
		return nil, err
	}
	c.File = file
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// notAMapping refuses a document whose top level is not a mapping with its position only: a file
// given by mistake (a one-line token, a key) must never be echoed in the error, which goes to
// logs. Other problems are left to the decoder.
func notAMapping(file string, data []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	what := ""
	switch root.Kind {
	case yaml.MappingNode:
		return nil
	case yaml.ScalarNode:
		if root.Tag == "!!null" {
			return nil
		}
		what = fmt.Sprintf("a value of %d bytes", len(root.Value))
	case yaml.SequenceNode:
		what = "a list"
	default:
		what = "something else"
	}
	return &config.Error{File: file, Line: root.Line,
		Msg: fmt.Sprintf("column %d: expected a mapping of settings (listen, checks, ...), got %s (not shown): is this the config file?", root.Column, what)}
}

// SetListen overrides the listen address (the --listen flag), validating it.
func (c *Config) SetListen(addr string) error {
	if _, err := ListenPort(addr); err != nil {
		return &config.Error{Field: "--listen", Msg: err.Error()}
	}
	c.Listen = addr
	return nil
}

// MetricsEnabled reports whether /metrics is served.
func (c *Config) MetricsEnabled() bool { return c.Metrics == nil || *c.Metrics }

// ListenPort validates a host:port listen address and returns its port.
func ListenPort(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf(`expected host:port such as ":8080" or "127.0.0.1:8080", got %q`, addr)
	}
	port, err := config.ParsePort(p)
	if err != nil {
		return 0, fmt.Errorf(`expected host:port with a port number (1-65535), such as ":8080", got %q`, addr)
	}
	return port, nil
}

// errs collects validation errors located in the file.
type errs struct {
	file string
	list config.Errors
}

func (e *errs) add(n *yaml.Node, field, format string, args ...any) {
	e.list = append(e.list, config.NodeError(e.file, n, field, format, args...))
}

// at returns the node of key in mapping m (the key itself, for its line), or m.
func at(m *yaml.Node, key string) *yaml.Node {
	if k := config.KeyNode(m, key); k != nil {
		return k
	}
	return m
}

func (c *Config) validate() error {
	e := &errs{file: c.File}
	root := &c.Self
	if c.Listen == "" {
		c.Listen = DefaultListen
	} else if _, err := ListenPort(c.Listen); err != nil {
		e.add(at(root, "listen"), "listen", "%v", err)
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = health.DefaultShutdownTimeout
	}
	c.validateLimits(e)
	pairs := func(key string, list []string) {
		seq := config.ValueNode(root, key)
		for i, s := range list {
			n := root
			if seq != nil && i < len(seq.Content) {
				n = seq.Content[i]
			}
			port, path, ok := strings.Cut(s, ":")
			if _, err := config.ParsePort(port); !ok || err != nil || path == "" {
				e.add(n, fmt.Sprintf("%s[%d]", key, i), `expected "port:path" with a port number (1-65535), such as "8080:/etc/vitals/disabled", got %q`, s)
			}
		}
	}
	pairs("disable_by_file_paths", c.DisableByFilePaths)
	pairs("enable_by_file_paths", c.EnableByFilePaths)

	if len(c.Checks) == 0 {
		e.add(at(root, "checks"), "checks", "expected at least one check")
	}
	seen := map[string]string{} // name -> field of first use
	for i := range c.Checks {
		ch := &c.Checks[i]
		field := fmt.Sprintf("checks[%d]", i)
		self := &ch.Self
		// Decoding succeeded, so name and type are present; they may still be empty.
		if ch.Name == "" {
			e.add(at(self, "name"), field+".name", "expected a non-empty name")
		} else {
			if !nameRE.MatchString(ch.Name) {
				e.add(at(self, "name"), field+".name", "expected letters, digits, '_', '.' or '-' (the name is a URL path segment), got %q", ch.Name)
			} else if first, dup := seen[ch.Name]; dup {
				e.add(at(self, "name"), field+".name", "duplicate check name %q (already used by %s)", ch.Name, first)
			} else {
				seen[ch.Name] = field
			}
		}
		if _, err := ch.probes(); err != nil {
			e.add(at(self, "probes"), field+".probes", "%v", err)
		}
		if _, err := ch.severity(); err != nil {
			e.add(at(self, "severity"), field+".severity", "%v", err)
		}
		if ch.FailureThreshold < 0 {
			e.add(at(self, "failure_threshold"), field+".failure_threshold", "expected a positive integer, got %d", ch.FailureThreshold)
		}
		if ch.SuccessThreshold < 0 {
			e.add(at(self, "success_threshold"), field+".success_threshold", "expected a positive integer, got %d", ch.SuccessThreshold)
		}
		timeout, ok := ch.validateTiming(e, field)
		t := Registry().Lookup(ch.Type)
		if t == nil {
			e.add(at(self, "type"), field+".type", "unknown check type %q (expected one of: %s)", ch.Type, strings.Join(TypeNames(), ", "))
			continue
		}
		if !ok {
			continue
		}
		errs, warns := decode(c.File, field, t, ch, timeout)
		e.list = append(e.list, errs...)
		c.Warnings = append(c.Warnings, warns...)
	}
	if len(e.list) > 0 {
		return e.list
	}
	return nil
}

// MinInterval is the shortest interval a check may have: a shorter one spends the machine on
// health checks (1ns would keep both cores busy) and answers no probe any better.
const MinInterval = 100 * time.Millisecond

// MinTimeout is the shortest timeout a check may have: no check completes in less.
const MinTimeout = time.Millisecond

// validateTiming checks the interval and the timeout against each other, the defaults included
// (a timeout is honoured as written, never capped), and returns the effective timeout.
func (ch *CheckConfig) validateTiming(e *errs, field string) (time.Duration, bool) {
	self := &ch.Self
	ok := true
	interval, what := ch.Interval, "the interval"
	if interval == 0 {
		interval, what = health.DefaultInterval, "the default interval"
	}
	if ch.Interval != 0 && ch.Interval < MinInterval {
		e.add(at(self, "interval"), field+".interval", "expected at least %s, got %s", MinInterval, ch.Interval)
		ok = false
	}
	timeout := ch.Timeout
	switch {
	case timeout == 0:
		timeout = min(health.DefaultTimeout, interval)
	case timeout < MinTimeout:
		e.add(at(self, "timeout"), field+".timeout", "expected at least %s, got %s", MinTimeout, timeout)
		ok = false
	case timeout > interval && ok:
		e.add(at(self, "timeout"), field+".timeout", "expected at most %s (%s), got %s; raise the interval or lower the timeout", what, interval, timeout)
		ok = false
	}
	return timeout, ok
}

// validateLimits rejects negative server limits: a limit can be tuned, not turned off (durations
// are positive by decoding).
func (c *Config) validateLimits(e *errs) {
	root := &c.Self
	for _, n := range []struct {
		key string
		v   int
	}{{"max_header_bytes", c.MaxHeaderBytes}, {"max_connections", c.MaxConnections}} {
		if n.v < 0 {
			e.add(at(root, n.key), n.key, "expected a positive integer, got %d", n.v)
		}
	}
}

func (ch *CheckConfig) probes() (health.Probe, error) {
	var p health.Probe
	for _, s := range ch.Probes {
		q, err := health.ParseProbe(s)
		if err != nil {
			return 0, err
		}
		p |= q
	}
	return p, nil
}

func (ch *CheckConfig) severity() (health.Severity, error) {
	switch strings.ToLower(ch.Severity) {
	case "", "critical":
		return health.Critical, nil
	case "degraded":
		return health.Degraded, nil
	}
	return 0, fmt.Errorf("expected critical or degraded, got %q", ch.Severity)
}

// TypeNames lists the check types, sorted.
func TypeNames() []string { return Registry().Names() }

// commonKeys are the keys every check entry accepts.
var commonKeys = config.StructKeys(CheckConfig{})

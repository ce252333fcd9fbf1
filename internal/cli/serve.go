package cli

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/serve"
)

type serveOptions struct {
	config    string
	listen    string
	logFormat string
	logLevel  string
}

func newServeCommand() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --config FILE [--listen ADDR]",
		Short: "Run a standalone health server from a YAML list of checks",
		Long: `Run a standalone health server (a sidecar for services that cannot embed the health library).
The YAML file lists the checks with their type, parameters and probes; see docs/serve.md and
examples/serve.yaml. The server answers /livez, /readyz, /startupz, /healthz, /alive, /ready, their
/<probe>/<check> sub-paths and /metrics. On SIGTERM readiness fails at once and liveness holds for the
drain delay. A bad config fails at start with file:line, field and what was expected (exit code 2).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "YAML config file (required)")
	f.StringVar(&o.listen, "listen", "", "listen address host:port, overriding the config's listen")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

func runServe(cmd *cobra.Command, o *serveOptions) error {
	if o.config == "" {
		return usageError{fmt.Errorf("serve: --config FILE is required")}
	}
	log, err := newServeLogger(cmd, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	cfg, err := serve.Load(o.config)
	if err != nil {
		return err
	}
	if o.listen != "" {
		if err := cfg.SetListen(o.listen); err != nil {
			return err
		}
	}
	return serve.Run(cmd.Context(), cfg, serve.Options{Logger: log})
}

// newServeLogger builds the slog logger of serve from its --log-format and --log-level flags; logs
// go to the command's stderr.
func newServeLogger(cmd *cobra.Command, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level: expected debug, info, warn or error, got %q", level)}
	}
	w := cmd.ErrOrStderr()
	if w == nil {
		w = os.Stderr
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format: expected text or json, got %q", format)}
}

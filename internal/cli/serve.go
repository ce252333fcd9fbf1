package cli

import (
	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/internal/cli/clirun"
	"github.com/vitalsproject/vitals/serve"
)

type serveOptions struct {
	config string
	listen string
	log    *clirun.LogFlags
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
	o.log = clirun.AddLogFlags(cmd, "text")
	clirun.CompleteFiles(cmd, "config", "yaml", "yml")
	return cmd
}

func runServe(cmd *cobra.Command, o *serveOptions) error {
	if o.config == "" {
		return clirun.Usagef("serve: --config FILE is required")
	}
	log, err := o.log.Logger(cmd.ErrOrStderr())
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

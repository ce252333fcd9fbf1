package agentcmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/cnireport"
	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

// newReportCommand is `<agent> report`: one CNI result sent to the agent's socket, for plugins written
// as scripts and for testing.
func newReportCommand(parent string) *cobra.Command {
	var (
		socket  string
		rep     cnireport.Report
		timeout time.Duration
		op      string
		result  string
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Report one CNI operation result to the node agent's socket",
		Long: `Report one CNI operation result to the node agent over its unix socket, as a CNI plugin or
daemon would: one JSON line {"op":"ADD","result":"failure","pod":"ns/name","error":"..."}.
Exit status 0 when the agent accepted it, 1 when it could not be delivered or was rejected.`,
		Example: fmt.Sprintf(`  %[1]s report --op ADD --result failure --pod default/web-0 --error "no IP addresses available"
  %[1]s report --op ADD --result success --pod default/web-0`, binaryOf(parent)),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep.Op = cnireport.Op(strings.ToUpper(op))
			rep.Result = cnireport.Outcome(strings.ToLower(result))
			if err := rep.Validate(); err != nil {
				return &config.Error{Field: "report", Msg: err.Error()}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if _, err := cnireport.Send(ctx, socket, rep); err != nil {
				return fmt.Errorf("report to %s: %w", socket, err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&socket, "socket", cnireport.DefaultSocketPath, "the agent's report socket")
	fs.StringVar(&op, "op", "ADD", "CNI operation: ADD, DEL or CHECK")
	fs.StringVar(&result, "result", "", "success or failure (required)")
	fs.StringVar(&rep.Pod, "pod", "", "the pod, namespace/name")
	fs.StringVar(&rep.Error, "error", "", "why it failed")
	fs.StringVar(&rep.ContainerID, "container-id", "", "the sandbox's container ID")
	fs.DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	clirun.CompleteFiles(cmd, "socket")
	clirun.CompleteValues(cmd, "op", string(cnireport.OpAdd), string(cnireport.OpDel), string(cnireport.OpCheck))
	clirun.CompleteValues(cmd, "result", string(cnireport.Success), string(cnireport.Failure))
	return cmd
}

// binaryOf is the command line that runs the agent command named use: the vitals-agent binary, or the
// agent command of vitals.
func binaryOf(use string) string {
	if use == "vitals-agent" {
		return use
	}
	return "vitals " + use
}

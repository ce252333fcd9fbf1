// Command slim is `vitals agent` alone: the same command (agent.NewCommand) in a binary that links
// nothing else of Vitals. bench/agent/run.sh measures it beside the all-in-one vitals binary, to show
// what the operator, the simulator and their dependencies cost the agent in resident memory.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/vitalsproject/vitals/agent"
	"github.com/vitalsproject/vitals/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd := agent.NewCommand("slim")
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "vitals-agent: %v\n", err)
		var cerr *config.Error
		if errors.As(err, &cerr) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

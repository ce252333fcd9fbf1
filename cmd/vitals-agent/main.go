// Command vitals-agent is Vitals' node agent (a DaemonSet with host networking): CNI health probes, the
// CNI ADD failure budget and node conditions. docs/agent.md describes it.
package main

import (
	"os"

	"github.com/vitalsproject/vitals/internal/cli/agentcmd"
)

func main() { os.Exit(agentcmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }

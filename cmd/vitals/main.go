// Command vitals is the health and self-healing system for Kubernetes clusters on OpenStack.
package main

import (
	"os"

	"github.com/vitalsproject/vitals/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }

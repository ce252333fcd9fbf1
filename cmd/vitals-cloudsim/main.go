// Command vitals-cloudsim runs the in-memory OpenStack simulator (Keystone, Neutron, Nova, Cinder, Octavia) on
// one address, for the demo, benchmarks and fault scenarios. It is a test and demo tool, not part of the
// production image. See docs/cloudsim.md.
package main

import (
	"os"

	"github.com/vitalsproject/vitals/internal/cli/cloudsimcmd"
)

func main() { os.Exit(cloudsimcmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }

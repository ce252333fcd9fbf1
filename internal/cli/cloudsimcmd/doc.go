// Package cloudsimcmd is the command line of vitals-cloudsim, the OpenStack simulator (package internal/test/cloudsim)
// run as a process for the demo, benchmarks and manual scenarios. It is a test and demo tool: no production
// binary links it.
package cloudsimcmd

// Package cnireport is the client side of the node agent's report socket: a CNI plugin or a CNI daemon
// sends the result of each CNI operation to the agent as one JSON line (docs/agent.md, "The report
// socket"), and reads one answer line per report.
//
// It imports the standard library only, so that a CNI plugin can use it without linking the agent, the
// Kubernetes client or anything else of Vitals: `go list -deps` of this package lists no module outside
// the standard library (TestStdlibOnly keeps it that way).
package cnireport

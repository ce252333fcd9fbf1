// Package agentcmd is the command line of the node agent: the `vitals-agent` binary's root command,
// also mounted as `vitals agent`. It is its own package, apart from the rest of internal/cli, so that
// the agent's binary links the agent and nothing of the operator (controller-runtime, gophercloud).
package agentcmd

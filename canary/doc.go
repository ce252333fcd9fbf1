// Package canary is the pod network canary: a small process that runs in a pod on the pod network on
// every node (cmd/vitals-canary, a DaemonSet beside the node agent's) and plays two parts of the
// agent's pod network connectivity check (docs/agent.md, "Peers discovered"):
//
//   - a target: it accepts TCP connections on its port (and closes them at once), so that the agents
//     of other nodes can tell whether this node's pods are reachable; a headless Service selects the
//     canaries, and its EndpointSlices are how every agent finds them;
//   - a source: it connects to its node agent's unix socket (a host directory both mount), says who it
//     is (Hello), and runs the probes the agent asks for (Request) from its own network namespace,
//     which is a pod's, answering each with fixed words (Response). The agent itself runs on the host
//     network and needs no capability to enter a namespace: the canary is its hand on the pod network.
//
// The protocol is JSON lines over the socket, at most MaxLine bytes each: the canary sends a Hello
// first, then a Response to each Request, in any order (by ID). A Request holds at most MaxProbes
// probes and a timeout of at most MaxTimeout.
//
// It imports the standard library and package netprobe only (a small static binary on every node).
package canary

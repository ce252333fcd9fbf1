// Package netprobe holds the node agent's network probes: a TCP connection opened and closed, a DNS
// query for a name's address, each through a Dialer that decides where the socket is made (the
// agent's own network namespace, another one, or the pod network canary's). A failure is one of a few
// fixed words (Failure), never text that the network sent: they end up in node conditions, and a
// condition's message must change only when the failure does.
//
// It imports the standard library and golang.org/x/net/dns/dnsmessage only, so that the canary
// (cmd/vitals-canary), which runs on every node beside the agent, stays a small static binary
// (TestDependencies keeps it that way).
package netprobe

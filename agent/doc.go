// Package agent wires Vitals' node agent (`vitals agent`, a DaemonSet with host networking): the CNI
// health profile served on Kuryr's [cni_health_server] port, the sources of CNI ADD results that feed a
// failure budget, and the node conditions that tell people and the operator what the agent sees.
//
// Readiness: the Kubernetes API is reachable (a cached check) and NET_ADMIN is in the effective
// capability set. Liveness: netlink works, the CNI ADD failure budget is not exhausted, every agent
// component beats, memory is under the limit, and the CNI configuration directory holds a parseable
// network configuration. Liveness never depends on the Kubernetes API.
//
// CNI ADD results come from three sources that all end in a Reporter: kubelet Events with reason
// FailedCreatePodSandBox for pods on this node (EventSource), JSON lines on a local unix socket
// (SocketServer, protocol in docs/agent.md), and the Go API (Agent.Reporter) for daemons that embed the
// health library.
package agent

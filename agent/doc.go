// Package agent wires Vitals' node agent (`vitals-agent`, a DaemonSet with host networking): the CNI
// health profile served on Kuryr's [cni_health_server] port, the sources of CNI ADD results that feed
// failure budgets, and the node conditions that tell people and the operator what the agent sees.
//
// Readiness: the Kubernetes API is reachable (a cached check) and the required capabilities are in the
// effective set. Liveness: netlink works, every agent component beats, memory is under the limit, the
// CNI configuration directory holds a parseable network configuration, and (unless configured off) the
// CNI ADD failure budget is not exhausted. Liveness never depends on the Kubernetes API.
//
// CNI ADD results come from the CNI itself, through JSON lines on a root-only unix socket (SocketServer,
// protocol in docs/agent.md, client in package cnireport, sent by the vitals-cni reporter) or the Go API
// (Agent.Reporter) for daemons that embed the health library; they feed the budget cni-add-failures.
// kubelet's FailedCreatePodSandBox Events for pods on this node (EventSource) feed a budget of their
// own, sandbox-network-failures, only when they are evidence (the pod is bound to this node and not
// running, the failure is the network's, the Event is recent), and that budget never fails a probe:
// anyone who may write Events can write those.
//
// The agent talks to the Kubernetes API with Kube, a core/v1-only client, and backs off (jittered,
// exponential) after every failed request it retries.
package agent

// Package flight keeps a VitalsCluster's nodes and networking healthy on OpenStack: the failure modes
// of the design documents' Flight Controller, each a repair with its own detection, condition, Event,
// metric, and the remediation policy's budget, pause, exclusions and dry-run.
//
// A pass reads everything the repairs need once (read.go): the cluster's router, the project's servers
// and ports through the cluster's scoped cloud (package tenancy: only the cluster's proven project),
// its security group, and the workload cluster's Nodes (package workload). A failed read, or a read
// that contradicts itself (the mark of a truncated list), aborts the pass: no repair runs. Each
// repair (one file each, the Repair interface in repair.go) then detects from the read, without
// changing anything; the servers the repairs hold broken feed the storm rule of the one remediation
// pass (remediation.Policy.Begin) of the reconcile, and every change is asked of it (Env.Act). The
// repairs:
//
//   - secgroup_rules.go: the security group allows the pod CIDRs and node-to-node traffic;
//   - secgroup_association.go: a server without the group gets it back;
//   - errored_servers.go: servers in vm_state error are deleted, once proven, only where the node repair
//     would delete them (its guards and pools);
//   - routes.go: duplicate, stale and missing pod routes, and the route limit's headroom.
//
// Which servers are the cluster's: see v1alpha1.FlightServers.
package flight

// Package routes is what Vitals knows about the static routes of a cluster's Neutron router, in one place:
// which routes are the cluster's (destination entirely inside a pod CIDR), which are protected, which
// nexthops are alive (an address of a port or server of the project), when an orphaned route is proven
// (two sightings at least one interval apart), how a Node's pod CIDR should be routed, and how routes are
// removed and added without losing a concurrent change (extraroute-atomic, or an If-Match update retried
// on a conflict).
//
// It decides nothing and asks nothing: the route collector (controllers/routegc), flight's route repair,
// deorbit's route phase and `vitals routes audit` read with Read, classify with Analyze or PlanNodes, ask
// the remediation policy with RemoveAction or AddAction, and write with Remover.
//
// analysis.go holds the pure classification (table-tested); nodes.go the plan of each Node's pod route;
// read.go the complete read; remove.go the writes; spec.go the parsing of a VitalsCluster's pod CIDRs and
// protected routes; action.go the actions the policy is asked for.
package routes

// Package routegc is the route garbage collector: per Cluster, it removes the static routes of the
// cluster's Neutron router that send a pod network to an address no port (or server) of the project
// holds any more — the debris a deleted node leaves behind, which breaks the node that later reuses
// the pod network.
//
// Safety comes first. A route is the cluster's only if its destination lies entirely inside one of
// the cluster's pod CIDRs; it is orphaned if its nexthop is no address of any port (or server) of
// the project. An orphaned route is removed only after two passes at least one interval apart saw
// it orphaned (the proof is kept in the Cluster's status, so it survives restarts); routes on the
// protected list and routes outside the pod CIDRs are never touched; a failed or partial read aborts
// the pass; at most Budget routes go per pass; dry-run only reports; and no pass runs while the
// operator's own Keystone or Neutron readiness checks fail. Every removal and every removal held
// back by a rule is an Event, a metric and a line in the Cluster's status.
//
// analysis.go holds the pure decision (table-tested); remove.go the removal with extraroute-atomic
// or an If-Match update retried on conflict; controller.go the reconciler.
package routegc

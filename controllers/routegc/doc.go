// Package routegc is the route garbage collector: per VitalsCluster, it removes the static routes of
// the cluster's Neutron router that send a pod network to an address no port (or server) of the
// project holds any more — the debris a deleted node leaves behind, which breaks the node that later
// reuses the pod network.
//
// Safety comes first. A route is the cluster's only if its destination lies entirely inside one of
// the cluster's pod CIDRs; it is orphaned if its nexthop is no address of any port (or server) of
// the project. An orphaned route is proven only after two passes at least one interval apart saw it
// orphaned (the proof is kept in the cluster's status, so it survives restarts); routes on the
// protected list and routes outside the pod CIDRs are never touched; a failed or partial read aborts
// the pass; at most Budget routes go per pass. Every proven removal is then asked of the remediation
// policy (package remediation), which owns the budget over a window, the storm rule, pauses,
// exclusions, dry-run, the gate and the minimum proof age, and records each decision. The
// collector's own rules (proof pending, protected, the cap per pass) are Events, metrics and status
// lines of their own.
//
// The route knowledge (classification, the complete read, removal with extraroute-atomic or an If-Match
// update retried on conflict) is package routes, which flight, deorbit and the CLI use too; this package
// holds the controller.
package routegc

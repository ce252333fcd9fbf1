// Package tenancy decides where a VitalsCluster may act, and proves it before anything is written.
//
// A VitalsCluster acts in exactly one OpenStack project: the one its credentials Secret (in its own
// namespace) authenticates to. The operator's own credentials serve only clusters in namespaces the operator
// is configured to trust. Every cloud resource the spec names (router, network, subnet, security group) is
// read and must belong to that project; pod CIDRs must not be wider than the configured limit nor overlap
// another cluster's on the same router. A cluster that fails any of these gets a Refusal with a reason, and
// no controller acts for it. A cluster being deleted that was proven in its project with the spec it has now
// keeps its scope when its owner's teardown has deleted the router, network, subnet or security group it names
// (Scope.Gone; without a router, no router write): deorbit still has the project's volumes and load balancers
// to delete. Secret contents never appear in an error, whatever the parse error.
package tenancy

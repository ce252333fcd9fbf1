// Package tenancy decides where a VitalsCluster may act, and proves it before anything is written.
//
// A VitalsCluster acts in exactly one OpenStack project: the one its credentials Secret (in its own
// namespace) authenticates to. The operator's own credentials serve only clusters in namespaces the operator
// is configured to trust. Every cloud resource the spec names (router, network, subnet, security group) is
// read and must belong to that project; pod CIDRs must not be wider than the configured limit nor overlap
// another cluster's on the same router. A cluster that fails any of these gets a Refusal with a reason, and
// no controller acts for it. Secret contents never appear in an error, whatever the parse error.
package tenancy

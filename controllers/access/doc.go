// Package access is the controller that proves, for every VitalsCluster the operator manages, where the
// operator may act for it, and keeps that proof fresh.
//
// For each cluster it sets the finalizer vitals.vitalsproject.io/deorbit, resolves the cluster's tenancy
// (credentials, project, ownership of every resource the spec names, pod CIDR limits and overlaps; see
// package tenancy) when the spec changes and at every interval, and reports the result: status.projectID,
// the CloudVerified condition (reason Verified or the refusal's reason), an Event when the result changes,
// and the per-cluster check remediation.CheckCloud that gates every destructive action. A cluster that
// goes has its caches and checks forgotten. Until the deorbit controller exists, the finalizer is removed
// at once on deletion, so that deletion never hangs.
//
// cloud.go holds the cloud part, controller.go the reconciler.
package access

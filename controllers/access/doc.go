// Package access is the controller that proves, for every VitalsCluster the operator manages, where the
// operator may act for it, and keeps that proof fresh.
//
// For each cluster whose deletionPolicy is Deorbit it sets the finalizer vitals.vitalsproject.io/deorbit (and
// takes it off any other cluster: those go at once when deleted), resolves the cluster's tenancy
// (credentials, project, ownership of every resource the spec names, pod CIDR limits and overlaps; see
// package tenancy) when the spec changes and at every interval, and reports the result: status.projectID,
// the CloudVerified condition (reason Verified or the refusal's reason), an Event when the result changes,
// and the per-cluster check remediation.CheckCloud that gates every destructive action. A cluster that
// goes has its caches and checks forgotten. Without the deorbit controller (Options.Deorbit false), no cluster
// keeps the finalizer, so that deletion never hangs.
//
// With a workload access it also connects each cluster's workload cluster (package workload) and reports
// the WorkloadReachable condition, with an Event when it changes; the access itself reports the check
// remediation.CheckWorkload at every probe, and a change of health reconciles the cluster at once. The
// access of a cluster that goes is stopped.
//
// With both proven, it checks the workload cluster's own consumers of OpenStack credentials (the cloud controller
// manager's and Cinder CSI's Secrets in kube-system, spec.workloadCredentials): their credentials are tried against
// the cluster's own proven Keystone only (tenancy.Keystone), once per version of each Secret, judged as the cluster's
// own (Judge), and after a change of a Secret its consumer pods that started before are named: the
// WorkloadCredentialsHealthy condition and status.access.workloadCredentials.
//
// cloud.go holds the cloud part, workload.go the workload part, credentials.go the cluster's credentials,
// workloadcreds.go (with workloadsecret.go and consumers.go) the workload cluster's, controller.go the reconciler.
package access

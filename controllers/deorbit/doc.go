// Package deorbit cleans up after a deleted VitalsCluster: it holds the finalizer
// vitals.vitalsproject.io/deorbit until the cluster's Cinder volumes, Octavia load balancers and pod
// routes are gone, proven by the cloud itself, or until it gives up with a debris report.
//
// The phases, recorded in status.deorbit so that a restarted operator resumes where it was:
// VolumeSnapshots, PersistentVolumeClaims (each Cinder volume remembered from its PersistentVolume
// first), LoadBalancerServices (each Octavia load balancer remembered from the cloud controller
// manager's annotation, else its name; this chain runs from the first step, beside the snapshots and
// claims), Routes (inside the pod CIDRs, on the proven router), WaitForCloud (until the project's
// lists of volumes and load balancers no longer show them, for at most cloudWaitTimeout), Sweep (the project's volumes carrying Cinder CSI's cluster metadata and load
// balancers named or tagged kube_service_<cluster>_<namespace>_<service>, with their VIP on the cluster's subnet when
// it is known, are deleted directly, and what
// they leave in Neutron: the VIP ports recorded from the cluster's load balancers once these are gone,
// the floating IPs the cloud controller manager described as the cluster's when on no port or on such a
// VIP port; until the cloud shows none), then Done: the finalizer goes.
//
// Safety: every delete asks the remediation policy (as a teardown: outside the budgets, subject to
// pauses, exclusions, the gate, dry-run and the audit); the cloud is only reached through the
// cluster's tenancy scope, which proves each volume and load balancer the project's before it is
// deleted; a volume or load balancer is deleted directly only when its own metadata or name proves it
// the cluster's, and never while another VitalsCluster names the same cloud cluster in the project.
// A cluster whose workload cluster is the operator's own is released at once: deorbit never deletes
// in the management cluster or its cloud.
//
// Every proof of what is the cluster's and what is kept lives in the engine or in a function the operator and
// `vitals deorbit` both call, so that a teardown refuses the same wherever it runs: the subnet (Target.Narrow,
// ccm.OwnsLoadBalancer), the same-named neighbours (NeighbourGuard, in guard.go; Input.SweepRefused where it cannot be
// read), the keep markers and the keep ledger (KeepLedger, taken again at the teardown's start), the exclusions (the
// policy's, which a load balancer's VIP port and floating IP follow). Only the interlock (interlock.go) is the
// operator's own: the command's confirmation is its being run.
//
// engine.go is the phase machine (Engine.Step, shared with `vitals deorbit`); workload.go the
// Kubernetes phases; cloud.go the routes, the wait and the sweep; network.go the sweep's ports and
// floating IPs; track.go the bounded parallel
// deletes with backoff and jitter; debris.go the give-up; controller.go the reconciler.
package deorbit

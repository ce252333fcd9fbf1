// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

// Package remediate is Vitals as Cluster API's external remediation: a MachineHealthCheck whose remediation
// template is a VitalsRemediationTemplate creates a VitalsRemediation for each Machine that fails its checks
// (named like the Machine, owned by it), and this controller reboots the Machine's server through Nova: soft
// first, hard when the Machine is not healthy again after softRebootTimeout, and nothing more when the hard
// reboot did not bring it back within hardRebootTimeout: then the Machine is handed back to the MachineSet or
// control plane that controls it (its OwnerRemediated condition False, as Cluster API's contract for external
// remediation has it), which replaces it; a Machine nothing controls stops with NoRecovery. Vitals never
// deletes the server. Flight never reboots a Machine's node
// itself; this is the only path by which Vitals does.
//
// Every step is safe the way flight's node steps are: the server is the one the Machine's providerID names,
// read through the VitalsCluster's scoped cloud (package tenancy: it must be in the project the cluster's own
// credentials prove, else the remediation stops with ForeignServer); each reboot is asked of the cluster's
// remediation policy (package remediation: pause, exclusions, dry-run, budgets, storm, outage freeze) and is
// sent only through the pass's fence, which checks the cluster's pause and exclusions again at the write, and
// the Machine and its Cluster as the API server has them then (the same Machine, not deleted, still not
// healthy, neither paused by Cluster API: clusterctl move pauses the Cluster). One reboot at a time is in flight
// per pool (the Machine's MachineDeployment, else the MachineSet or control plane that controls it: the policy's
// pool rule), and a control-plane Machine's reboot is held when etcd would lose its quorum (nodes.EtcdQuorum, as
// flight has it, read in the workload cluster). Each
// step is recorded: an Event on the VitalsRemediation and on the Machine, vitals_remediate_steps_total, the
// policy's status line in status.actions and its budgets in the VitalsCluster's status.remediation.
//
// It imports no other controller: the pieces it shares with flight are in packages nodes (the providerID),
// tenancy, remediation, fencing and controllers/pass (the dependencies and the status writer).
package remediate

// Package enrol is the controller that enrols Cluster API clusters: for each Cluster whose infrastructure is a
// CAPO OpenStackCluster and that opts in (the label vitals.vitalsproject.io/enrol "true" on the Cluster, or its
// namespace selected by the operator's namespace selector and no label "false"), it creates and owns the
// VitalsCluster of the same name in the Cluster's namespace (package clusterapi says what its spec is: CAPO's
// identity Secret, the OpenStackCluster's router, network, subnet and nodes' security group, the Cluster's pod
// CIDRs, Cluster API's <cluster>-kubeconfig Secret), labelled v1alpha1.LabelEnrolledBy, with deletionPolicy Deorbit
// (its deletion tears the cluster down once the interlock proves its owner going, package deorbit), or Orphan for
// health alone: Options.DeletionPolicy, or the Cluster's label clusterapi.DeletionPolicyLabel, which the
// VitalsCluster's deletionPolicy follows while it is there (a value other than Orphan or Deorbit makes and changes
// nothing).
//
// The enrolment acts only on the VitalsClusters it made: controlled by the Cluster and carrying its label. One a
// user or a tool made with a controller reference to the Cluster but without the label is left alone (an Event
// NotEnrolment on the Cluster, a log line at V(1)): not followed, paused or deleted with the Cluster, its Machines
// not held for it.
//
// Updates follow the owner: when the Cluster or its OpenStackCluster changes, the fields Cluster API and CAPO
// decide are patched (clusterapi.Follow); the rest of the spec (remediation, controllers, deletionPolicy) stays
// the user's. A VitalsCluster of that name that the Cluster does not control is never touched (an Event on the
// Cluster says so). A paused Cluster (cluster.x-k8s.io/paused or spec.paused, as clusterctl move does) pauses
// its VitalsCluster (vitals.vitalsproject.io/paused, marked as the enrolment's) and nothing else is changed
// until it is unpaused. When the Cluster is being deleted, and not moved (clusterapi.Teardown), its
// VitalsCluster is deleted, so that deorbit starts while the workload API is still there.
//
// The Machines of an enrolled Cluster carry the pre-terminate deletion hook clusterapi.MachineDeletionHook for
// as long as its VitalsCluster holds them (clusterapi.HoldMachines): Cluster API deletes no Machine's
// infrastructure while it is there. The hook is on every Machine before any teardown begins, because Cluster
// API deletes the Machines the moment their Cluster is deleted, faster than any controller could hook them
// then. A Machine deleted while its Cluster lives (a scale-down, a rollout, a remediation) is released at once;
// in a teardown every Machine stays held until deorbit is through. The hooks come off when the VitalsCluster no
// longer holds (Orphan, deorbit through) and when the Cluster has no VitalsCluster of its own (not enrolled and
// none left of an enrolment, or its name taken). Were the enrolment stopped, a Machine's deletion would wait for
// it rather than go ahead of deorbit.
//
// A Cluster that opts out after its enrolment (its label "false", its namespace no longer selected) keeps the
// VitalsCluster it controls: it is neither made again nor follows the Cluster's spec, but it still follows the
// pause, its Machines stay hooked, and it is deleted with the Cluster. Its deletionPolicy, the user's explicit
// word, decides what deorbit deletes; an opt-out deletes nothing by itself, and does not leave Cluster API's
// BeforeClusterDelete hook (package clusterapi) or a Machine's deletion waiting for a deletion nobody makes.
//
// Every write is fenced (package fencing) at the moment it is sent: the Cluster is read again from the API
// server, and the write is refused when it is gone or another Cluster of the same name, when it is paused now
// (except the write that pauses the VitalsCluster), when a deletion it carries no longer holds, and beyond this
// replica's fenced validity for the Cluster's UID (its shard, or leadership).
package enrol

// Package cloudheal repairs the cloud resources a running cluster's own controllers made (Cinder CSI's
// volumes, the cloud controller manager's load balancers), which those controllers only log their failed
// calls about: per VitalsCluster, on the pass runner (package pass).
//
// Its repair today is staleAttachments: a volume of the cluster (Cinder CSI's cluster metadata, in the
// cluster's proven project) held reserved, attaching, detaching or in-use by a Cinder attachment whose
// server is gone. It keeps pods of a StatefulSet in ContainerCreating with Multi-Attach errors after a
// node failure until someone frees the volume by hand. An attachment is proven stale only by two passes
// at least one interval apart that both saw its server gone, for the repair's timeout (the proof is kept in
// the cluster's status, so that it survives restarts); then its removal through Cinder's attachment API is
// asked of the remediation policy as a disruptive action (budget, dry-run, pause, exclusions, the outage
// freeze) and, immediately before the write, the server is read again (it must still be gone) and the
// workload cluster's Nodes are read again, uncached: an attachment to a server a Ready Node names is never
// touched. Each removal is an Event on the VitalsCluster and on the volume's PersistentVolume in the workload
// cluster, a metric and a status line.
//
// The debris repair (debris.go, off by default) removes what the cloud controller manager left behind on a
// running cluster: a load balancer named or tagged for a Service that no longer exists (or is no longer of
// type LoadBalancer), the cloud controller manager's floating IP on its VIP port, a VIP port whose load
// balancer is gone, and a port on the cluster's network bound to a server the project does not list. It
// proves as routegc does: seen by two passes at least one interval apart, the first sighting at least the
// repair's proof age old (and the policy's minimum), the sightings kept in status; each delete a destructive
// removal asked of the remediation policy, after a fresh read of the object (a port at the revision it was
// proven at) and, for a load balancer, of the workload cluster's Services, uncached. A user's floating IP
// is never touched; an unattached one of the cloud controller manager's is reported only.
package cloudheal

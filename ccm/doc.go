// Package ccm holds the marks the OpenStack cloud controller manager, Octavia and Cinder CSI leave on what
// they make: the names, tags, descriptions, device owners and metadata by which a load balancer, its VIP
// port, a Service's floating IP or a volume is known to be a cluster's. Every controller that judges such
// an object (deorbit, cloudheal) and the CLI read them here, so that they never diverge.
package ccm

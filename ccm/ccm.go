package ccm

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vitalsproject/vitals/openstack"
)

// MetadataCluster is the volume metadata key Cinder CSI records its --cluster in.
const MetadataCluster = "cinder.csi.openstack.org/cluster"

// CinderCSIDriver is the Cinder CSI driver's name in a PersistentVolume.
const CinderCSIDriver = "cinder.csi.openstack.org"

// AnnotationLoadBalancerID is where the OpenStack cloud controller manager records a Service's Octavia
// load balancer.
const AnnotationLoadBalancerID = "loadbalancer.openstack.org/load-balancer-id"

// OwnsVolume reports whether v is cluster's by Cinder CSI's metadata.
func OwnsVolume(cluster string, v *openstack.Volume) bool {
	return cluster != "" && v.Metadata[MetadataCluster] == cluster
}

// LoadBalancerPrefix starts every load balancer name (and tag) of the OpenStack cloud controller manager.
const LoadBalancerPrefix = "kube_service_"

// MaxNameLength is the longest name Octavia and Neutron keep: the cloud controller manager cuts a load
// balancer's name to it.
const MaxNameLength = 255

// LoadBalancerName is the name the OpenStack cloud controller manager gives a Service's load balancer:
// kube_service_<cluster>_<namespace>_<service>, cut to 255 characters as the cloud controller manager
// cuts it (a cut name does not name its Service: see ServiceOf).
func LoadBalancerName(cluster, namespace, service string) string {
	n := LoadBalancerPrefix + cluster + "_" + namespace + "_" + service
	if len(n) > MaxNameLength {
		n = n[:MaxNameLength]
	}
	return n
}

// OwnsLoadBalancerName reports whether name is the cloud controller manager's name of a Service of
// cluster: kube_service_<cluster>_<namespace>_<service> where namespace and service are DNS labels
// (which hold no "_"), so that no other cluster's name can match: the name of cluster "a_b" leaves
// "b_ns_svc" after cluster "a"'s prefix, which has one "_" too many.
func OwnsLoadBalancerName(cluster, name string) bool {
	_, _, ok := lbService(cluster, name)
	return ok
}

func lbService(cluster, name string) (string, string, bool) {
	rest, ok := strings.CutPrefix(name, LoadBalancerPrefix+cluster+"_")
	if !ok || cluster == "" {
		return "", "", false
	}
	ns, svc, ok := strings.Cut(rest, "_")
	if !ok || len(validation.IsDNS1123Label(ns)) != 0 || len(validation.IsDNS1123Label(svc)) != 0 {
		return "", "", false
	}
	return ns, svc, true
}

// OwnsLoadBalancer reports whether lb is cluster's by its name or one of its tags (the cloud controller
// manager's full prefix kube_service_<cluster>_, OwnsLoadBalancerName), and, when subnet is known (the
// cluster's nodes' subnet, spec.openstack.subnetID), only with its VIP on that subnet: another cluster that
// reuses the name elsewhere in the project is not this one.
func OwnsLoadBalancer(cluster, subnet string, lb *openstack.LoadBalancer) bool {
	if subnet != "" && lb.VIPSubnetID != subnet {
		return false
	}
	if OwnsLoadBalancerName(cluster, lb.Name) {
		return true
	}
	for _, t := range lb.Tags {
		if OwnsLoadBalancerName(cluster, t) {
			return true
		}
	}
	return false
}

// OctaviaOwner is the device owner of the ports Octavia makes: a load balancer's VIP port is named
// octavia-lb-<load balancer ID>, with device ID lb-<load balancer ID>, in the load balancer's project.
const OctaviaOwner = "Octavia"

// VIPPortPrefix starts the name of every VIP port Octavia makes.
const VIPPortPrefix = "octavia-lb-"

// VIPPortName is the name Octavia gives the VIP port of load balancer lbID.
func VIPPortName(lbID string) string { return VIPPortPrefix + lbID }

// VIPPortOf returns the load balancer whose VIP port p is by all of Octavia's marks (owner, name,
// device ID), or false.
func VIPPortOf(p *openstack.Port) (string, bool) {
	id, ok := strings.CutPrefix(p.Name, VIPPortPrefix)
	if !ok || id == "" || p.DeviceOwner != OctaviaOwner || p.DeviceID != "lb-"+id {
		return "", false
	}
	return id, true
}

// FloatingIPPrefix starts the description the cloud controller manager gives its floating IPs.
const FloatingIPPrefix = "Floating IP for Kubernetes external service "

// FloatingIPDescription is the description the OpenStack cloud controller manager gives the floating
// IP it creates for Service namespace/service of cluster.
func FloatingIPDescription(cluster, namespace, service string) string {
	return FloatingIPPrefix + namespace + "/" + service + " from cluster " + cluster
}

// OwnsFloatingIPDescription reports whether desc is exactly the cloud controller manager's description
// of a floating IP of a Service of cluster: namespace and service are DNS labels (no space, no "/"), so
// that the cluster's name is all that follows them and no other cluster's description matches.
func OwnsFloatingIPDescription(cluster, desc string) bool {
	_, _, ok := fipService(cluster, desc)
	return ok
}

func fipService(cluster, desc string) (string, string, bool) {
	rest, ok := strings.CutPrefix(desc, FloatingIPPrefix)
	if !ok || cluster == "" {
		return "", "", false
	}
	svc, name, ok := strings.Cut(rest, " from cluster ")
	if !ok || name != cluster {
		return "", "", false
	}
	ns, svc, ok := strings.Cut(svc, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) != 0 || len(validation.IsDNS1123Label(svc)) != 0 {
		return "", "", false
	}
	return ns, svc, true
}

// ServiceOf returns the Service of cluster that name names: a load balancer's name or tag
// (kube_service_<cluster>_<namespace>_<service>) or a floating IP's description (exactly the cloud
// controller manager's). A name of 255 characters or more is a cut one whose Service cannot be known:
// never a Service's.
func ServiceOf(cluster, name string) (namespace, service string, ok bool) {
	if len(name) >= MaxNameLength {
		return "", "", false
	}
	if strings.HasPrefix(name, LoadBalancerPrefix) {
		return lbService(cluster, name)
	}
	return fipService(cluster, name)
}

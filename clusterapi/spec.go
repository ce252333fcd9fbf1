package clusterapi

import (
	"fmt"
	"net/netip"

	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Keys of the Secrets Cluster API and CAPO keep a cluster's access in.
const (
	// CloudsYAMLKey is the key of CAPO's identity Secret (OpenStackCluster spec.identityRef) with the clouds.yaml.
	CloudsYAMLKey = "clouds.yaml"
	// CACertKey is the key of CAPO's identity Secret with the CA bundle that the clouds.yaml's cacert names.
	CACertKey = "cacert"
	// KubeconfigKey is the key of Cluster API's <cluster>-kubeconfig Secret with the workload kubeconfig.
	KubeconfigKey = "value"
	// KubeconfigSuffix names Cluster API's kubeconfig Secret of a cluster: <cluster>-kubeconfig.
	KubeconfigSuffix = "-kubeconfig"
	// OpenStackClusterKind is the kind of CAPO's infrastructure cluster.
	OpenStackClusterKind = "OpenStackCluster"
)

// NotReadyError says which part of the OpenStackCluster's status a VitalsCluster needs is not there yet: CAPO has
// not made it (or never will, e.g. no router without an external network).
type NotReadyError struct{ Missing string }

func (e *NotReadyError) Error() string {
	return "the OpenStackCluster's status has no " + e.Missing + " yet"
}

// IsOpenStack reports whether cl's infrastructure is a CAPO OpenStackCluster.
func IsOpenStack(cl *clusterv1.Cluster) bool {
	ref := cl.Spec.InfrastructureRef
	return ref.Kind == OpenStackClusterKind && ref.APIGroup == infrav1.SchemeGroupVersion.Group && ref.Name != ""
}

// Spec is the VitalsCluster spec of cl on osc (its infrastructure, in the same namespace): the cluster's
// credentials are CAPO's identity Secret (its cloud), its router, network and first subnet those of osc's status,
// its nodes' security group CAPO's worker group, its pod CIDRs the Cluster's (spec.clusterNetwork.pods), its
// workload kubeconfig Cluster API's <cluster>-kubeconfig Secret, and the name the cloud provider tags its
// resources with cloudName (the cloud controller manager's --cluster-name, Cinder CSI's --cluster). Only the
// fields Cluster API and CAPO decide are set: remediation and controller settings stay the caller's. An error
// is a *NotReadyError while CAPO has not made what the spec needs, else a spec Cluster API accepts and the
// VitalsCluster does not (e.g. no pod CIDR).
func Spec(cl *clusterv1.Cluster, osc *infrav1.OpenStackCluster, cloudName string) (v1alpha1.ClusterSpec, error) {
	var s v1alpha1.ClusterSpec
	if !IsOpenStack(cl) {
		return s, fmt.Errorf("cluster %s/%s: infrastructure %s %s is not CAPO's %s", cl.Namespace, cl.Name,
			cl.Spec.InfrastructureRef.APIGroup, cl.Spec.InfrastructureRef.Kind, OpenStackClusterKind)
	}
	if osc.Namespace != cl.Namespace || osc.Name != cl.Spec.InfrastructureRef.Name {
		return s, fmt.Errorf("cluster %s/%s: OpenStackCluster %s/%s is not its infrastructure (%s)", cl.Namespace, cl.Name,
			osc.Namespace, osc.Name, cl.Spec.InfrastructureRef.Name)
	}
	id := osc.Spec.IdentityRef
	if id.Name == "" {
		return s, fmt.Errorf("OpenStackCluster %s/%s: spec.identityRef.name is empty", osc.Namespace, osc.Name)
	}
	st := osc.Status
	switch {
	case st.Router == nil || st.Router.ID == "":
		return s, &NotReadyError{Missing: "router (status.router; CAPO makes one only with an external network)"}
	case st.Network == nil || st.Network.ID == "":
		return s, &NotReadyError{Missing: "network (status.network)"}
	case len(st.Network.Subnets) == 0:
		return s, &NotReadyError{Missing: "subnet (status.network.subnets)"}
	}
	pods := cl.Spec.ClusterNetwork.Pods.CIDRBlocks
	if len(pods) == 0 {
		return s, fmt.Errorf("cluster %s/%s: spec.clusterNetwork.pods.cidrBlocks is empty (a VitalsCluster needs the pod CIDRs)", cl.Namespace, cl.Name)
	}
	for _, p := range pods {
		pfx, err := netip.ParsePrefix(p)
		if err != nil || pfx.Masked() != pfx {
			return s, fmt.Errorf("cluster %s/%s: spec.clusterNetwork.pods.cidrBlocks: %q is not a network in CIDR notation", cl.Namespace, cl.Name, p)
		}
		s.PodCIDRs = append(s.PodCIDRs, v1alpha1.CIDR(p))
	}
	s.KubeconfigSecretRef = &v1alpha1.SecretKeyRef{Name: cl.Name + KubeconfigSuffix, Key: KubeconfigKey}
	s.OpenStack = v1alpha1.OpenStackSpec{
		CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: id.Name, Key: CloudsYAMLKey},
		CACertKey:            CACertKey,
		Cloud:                id.CloudName,
		RouterID:             st.Router.ID,
		NetworkID:            st.Network.ID,
		SubnetID:             st.Network.Subnets[0].ID,
		ClusterName:          cloudName,
	}
	if sg := st.WorkerSecurityGroup; sg != nil && sg.ID != "" {
		s.OpenStack.SecurityGroupID = sg.ID
	}
	return s, nil
}

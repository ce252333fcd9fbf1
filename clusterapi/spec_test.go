package clusterapi

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

func testCluster() (*clusterv1.Cluster, *infrav1.OpenStackCluster) {
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod"},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork:    clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "OpenStackCluster", Name: "prod-osc"},
		}}
	osc := &infrav1.OpenStackCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod-osc"},
		Spec: infrav1.OpenStackClusterSpec{IdentityRef: infrav1.OpenStackIdentityReference{Name: "prod-cloud-config", CloudName: "openstack"}},
		Status: infrav1.OpenStackClusterStatus{
			Router:              &infrav1.Router{ID: "router-1"},
			Network:             &infrav1.NetworkStatusWithSubnets{NetworkStatus: infrav1.NetworkStatus{ID: "net-1"}, Subnets: []infrav1.Subnet{{ID: "subnet-1"}, {ID: "subnet-2"}}},
			WorkerSecurityGroup: &infrav1.SecurityGroupStatus{ID: "sg-worker", Name: "k8s-cluster-team-a-prod-secgroup-worker"},
		}}
	return cl, osc
}

func TestSpec(t *testing.T) {
	want := v1alpha1.ClusterSpec{
		KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "prod-kubeconfig", Key: "value"},
		OpenStack: v1alpha1.OpenStackSpec{
			CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "prod-cloud-config", Key: "clouds.yaml"},
			CACertKey:            "cacert",
			Cloud:                "openstack", RouterID: "router-1", NetworkID: "net-1", SubnetID: "subnet-1",
			SecurityGroupID: "sg-worker", ClusterName: "kubernetes",
		},
		PodCIDRs: []v1alpha1.CIDR{"10.244.0.0/16"},
	}
	for _, tc := range []struct {
		name     string
		edit     func(*clusterv1.Cluster, *infrav1.OpenStackCluster)
		want     func(*v1alpha1.ClusterSpec)
		notReady string // a NotReadyError naming this
		err      string // another error containing this
	}{
		{name: "ready"},
		{name: "two pod networks", edit: func(cl *clusterv1.Cluster, _ *infrav1.OpenStackCluster) {
			cl.Spec.ClusterNetwork.Pods.CIDRBlocks = []string{"10.244.0.0/16", "fd00:10::/64"}
		}, want: func(s *v1alpha1.ClusterSpec) { s.PodCIDRs = append(s.PodCIDRs, "fd00:10::/64") }},
		{name: "no worker security group", edit: func(_ *clusterv1.Cluster, o *infrav1.OpenStackCluster) { o.Status.WorkerSecurityGroup = nil },
			want: func(s *v1alpha1.ClusterSpec) { s.OpenStack.SecurityGroupID = "" }},
		{name: "no router yet", edit: func(_ *clusterv1.Cluster, o *infrav1.OpenStackCluster) { o.Status.Router = nil }, notReady: "router"},
		{name: "no network yet", edit: func(_ *clusterv1.Cluster, o *infrav1.OpenStackCluster) { o.Status.Network = nil }, notReady: "network"},
		{name: "no subnet yet", edit: func(_ *clusterv1.Cluster, o *infrav1.OpenStackCluster) { o.Status.Network.Subnets = nil }, notReady: "subnet"},
		{name: "no pod CIDR", edit: func(cl *clusterv1.Cluster, _ *infrav1.OpenStackCluster) { cl.Spec.ClusterNetwork.Pods.CIDRBlocks = nil },
			err: "spec.clusterNetwork.pods.cidrBlocks is empty"},
		{name: "host bits in a pod CIDR", edit: func(cl *clusterv1.Cluster, _ *infrav1.OpenStackCluster) {
			cl.Spec.ClusterNetwork.Pods.CIDRBlocks = []string{"10.244.0.1/16"}
		}, err: `"10.244.0.1/16" is not a network`},
		{name: "other infrastructure", edit: func(cl *clusterv1.Cluster, _ *infrav1.OpenStackCluster) {
			cl.Spec.InfrastructureRef.Kind = "DockerCluster"
		},
			err: "is not CAPO's OpenStackCluster"},
		{name: "another OpenStackCluster", edit: func(_ *clusterv1.Cluster, o *infrav1.OpenStackCluster) { o.Name = "other" },
			err: "is not its infrastructure"},
		{name: "no identity", edit: func(_ *clusterv1.Cluster, o *infrav1.OpenStackCluster) { o.Spec.IdentityRef.Name = "" },
			err: "spec.identityRef.name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, osc := testCluster()
			if tc.edit != nil {
				tc.edit(cl, osc)
			}
			got, err := Spec(cl, osc, "kubernetes")
			var nr *NotReadyError
			switch {
			case tc.notReady != "":
				if !errors.As(err, &nr) || !strings.Contains(nr.Missing, tc.notReady) {
					t.Fatalf("err = %v, want a NotReadyError naming %s", err, tc.notReady)
				}
				return
			case tc.err != "":
				if err == nil || errors.As(err, &nr) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			w := *want.DeepCopy()
			if tc.want != nil {
				tc.want(&w)
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("Spec =\n%+v\nwant\n%+v", got, w)
			}
		})
	}
}

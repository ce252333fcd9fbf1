package e2e

// Helpers of the scenarios on the Cluster API management cluster (testenv.CAPI, hack/capi.sh): the Cluster API
// core manager and CAPO, built from their Go modules, reconciling Clusters with OpenStackClusters on the real
// Keystone, Neutron and Octavia in a project of their own; the cloud side is read with that project's credentials.

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/internal/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// capiTimeout bounds every wait for the Cluster API managers and the cloud (seconds when idle; minutes on a
// loaded machine).
const capiTimeout = 5 * time.Minute

// capiMgmt is the management cluster of one test, with a client to its API and to CAPO's project on the cloud.
type capiMgmt struct {
	t     testing.TB
	env   testenv.CAPIEnv
	c     client.Client
	cloud *openstack.Cloud // the tenant's credentials
}

func capiOpen(t testing.TB) *capiMgmt {
	t.Helper()
	env := testenv.CAPI(t)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, infrav1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(env.Config(t), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	m := &capiMgmt{t: t, env: env, c: c, cloud: opConnect(t, opAuth(t, env.Tenant), nil)}
	if got := m.cloud.ProjectID(); got != env.ProjectID {
		t.Fatalf("the tenant's token is scoped to project %s, want %s", got, env.ProjectID)
	}
	return m
}

// Namespace creates a namespace in the management cluster, deleted at the end of the test.
func (m *capiMgmt) Namespace(prefix string) string {
	m.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := m.c.Create(context.Background(), ns); err != nil {
		m.t.Fatalf("create namespace in the management cluster: %v", err)
	}
	m.t.Cleanup(func() { _ = m.c.Delete(context.Background(), ns) })
	return ns.Name
}

// Cluster creates a Cluster with an OpenStackCluster (no control plane: the infrastructure alone) and the
// identity Secret CAPO reads: a managed network and subnet (cidr), a router with its gateway on the harness'
// external network, CAPO's managed security groups and an API load balancer without a floating IP (Octavia's
// no-op VIP has no Neutron port to bind one to).
func (m *capiMgmt) Cluster(ns, name, cidr string, podCIDRs ...string) (*clusterv1.Cluster, *infrav1.OpenStackCluster) {
	m.t.Helper()
	ctx := context.Background()
	clouds, err := os.ReadFile(m.env.CloudsYAML)
	if err != nil {
		m.t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-cloud-config",
		Labels: map[string]string{"clusterctl.cluster.x-k8s.io/move": "true"}},
		Data: map[string][]byte{"clouds.yaml": clouds}}
	osc := &infrav1.OpenStackCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: infrav1.OpenStackClusterSpec{
			IdentityRef:                infrav1.OpenStackIdentityReference{Name: secret.Name, CloudName: "openstack"},
			ManagedSubnets:             []infrav1.SubnetSpec{{CIDR: cidr}},
			ExternalNetwork:            &infrav1.NetworkParam{ID: ptr.To(m.env.ExternalNetworkID)},
			APIServerLoadBalancer:      &infrav1.APIServerLoadBalancer{Enabled: ptr.To(true)},
			DisableAPIServerFloatingIP: ptr.To(true),
			ManagedSecurityGroups:      &infrav1.ManagedSecurityGroups{},
		}}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: podCIDRs}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.SchemeGroupVersion.Group,
				Kind: "OpenStackCluster", Name: name},
		}}
	for _, o := range []client.Object{secret, osc, cl} {
		if err := m.c.Create(ctx, o); err != nil {
			m.t.Fatalf("create %T %s/%s: %v", o, ns, o.GetName(), err)
		}
	}
	m.t.Cleanup(func() { m.DeleteCluster(cl) })
	return cl, osc
}

// Ready waits until CAPO reports the OpenStackCluster ready with its network, subnet, router, both security
// groups and its API load balancer, and the Cluster's infrastructure provisioned; it returns the OpenStackCluster.
func (m *capiMgmt) Ready(cl *clusterv1.Cluster) *infrav1.OpenStackCluster {
	m.t.Helper()
	osc := &infrav1.OpenStackCluster{}
	opEventually(m.t, capiTimeout, "the OpenStackCluster ready and the Cluster's infrastructure provisioned", func() (bool, string) {
		if err := m.c.Get(context.Background(), client.ObjectKey{Namespace: cl.Namespace, Name: cl.Spec.InfrastructureRef.Name}, osc); err != nil {
			return false, err.Error()
		}
		s := osc.Status
		msg := fmt.Sprintf("ready %v, failure %s", s.Ready, ptr.Deref(s.FailureMessage, ""))
		if !s.Ready || s.Network == nil || len(s.Network.Subnets) == 0 || s.Router == nil || s.APIServerLoadBalancer == nil ||
			s.ControlPlaneSecurityGroup == nil || s.WorkerSecurityGroup == nil {
			return false, msg
		}
		got := &clusterv1.Cluster{}
		if err := m.c.Get(context.Background(), client.ObjectKeyFromObject(cl), got); err != nil {
			return false, err.Error()
		}
		if !ptr.Deref(got.Status.Initialization.InfrastructureProvisioned, false) {
			return false, "the Cluster's infrastructure not provisioned yet: phase " + got.Status.Phase
		}
		return true, msg
	})
	return osc
}

// DeleteCluster deletes the Cluster and waits until it is gone (CAPO's teardown done, the finalizers released).
func (m *capiMgmt) DeleteCluster(cl *clusterv1.Cluster) {
	m.t.Helper()
	ctx := context.Background()
	if err := m.c.Delete(ctx, cl); err != nil && !apierrors.IsNotFound(err) {
		m.t.Fatalf("delete Cluster %s/%s: %v", cl.Namespace, cl.Name, err)
	}
	opEventually(m.t, capiTimeout, "the Cluster and its OpenStackCluster gone", func() (bool, string) {
		for _, o := range []client.Object{&clusterv1.Cluster{}, &infrav1.OpenStackCluster{}} {
			err := m.c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: cl.Name}, o)
			if err == nil {
				return false, fmt.Sprintf("%T still there, finalizers %v", o, o.GetFinalizers())
			}
			if !apierrors.IsNotFound(err) {
				return false, err.Error()
			}
		}
		return true, ""
	})
}

// CloudHolds reports which of the OpenStackCluster's cloud resources the tenant's project still holds (read
// with the project's own credentials): "network", "subnet", "router", "security group <id>", "load balancer".
func (m *capiMgmt) CloudHolds(s infrav1.OpenStackClusterStatus) []string {
	m.t.Helper()
	ctx := context.Background()
	nc, err := m.cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		m.t.Fatal(err)
	}
	var held []string
	exists := func(what string, err error) {
		switch {
		case err == nil:
			held = append(held, what)
		case !openstack.IsNotFound(err):
			m.t.Fatalf("read %s: %v", what, err)
		}
	}
	if s.Network != nil {
		_, err := networks.Get(ctx, nc, s.Network.ID).Extract()
		exists("network", err)
		for _, sn := range s.Network.Subnets {
			_, err := subnets.Get(ctx, nc, sn.ID).Extract()
			exists("subnet", err)
		}
	}
	if s.Router != nil {
		_, err := routers.Get(ctx, nc, s.Router.ID).Extract()
		exists("router", err)
	}
	for _, sg := range []*infrav1.SecurityGroupStatus{s.ControlPlaneSecurityGroup, s.WorkerSecurityGroup, s.BastionSecurityGroup} {
		if sg != nil {
			_, err := groups.Get(ctx, nc, sg.ID).Extract()
			exists("security group "+sg.Name, err)
		}
	}
	if s.APIServerLoadBalancer != nil {
		// Octavia shows a deleted load balancer as DELETED for a while before it answers 404
		if lb, err := m.cloud.GetLoadBalancer(ctx, s.APIServerLoadBalancer.ID); err != nil || lb.ProvisioningStatus != "DELETED" {
			exists("load balancer", err)
		}
	}
	return held
}

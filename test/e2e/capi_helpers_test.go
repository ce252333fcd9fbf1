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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/internal/test/testenv"
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
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, infrav1.AddToScheme, runtimev1.AddToScheme} {
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
	secret := m.identity(ns, name)
	osc := &infrav1.OpenStackCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: m.oscSpec(secret.Name, cidr)}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: podCIDRs}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.SchemeGroupVersion.Group,
				Kind: "OpenStackCluster", Name: name},
		}}
	m.create(secret, osc, cl)
	m.t.Cleanup(func() { m.DeleteCluster(cl) })
	return cl, osc
}

// TopologyCluster creates a Cluster of a ClusterClass of its own: the infrastructure an OpenStackClusterTemplate of
// what Cluster makes, the control plane a KubeadmControlPlaneTemplate with an OpenStackMachineTemplate. Cluster
// API's topology controller makes the OpenStackCluster (named after the Cluster, with a suffix) and the
// KubeadmControlPlane from them; no control plane provider runs, so no server is ever made. Deleting the Cluster,
// the topology controller first asks the Runtime Extensions registered for BeforeClusterDelete.
func (m *capiMgmt) TopologyCluster(ns, name, cidr string, podCIDRs ...string) *clusterv1.Cluster {
	m.t.Helper()
	ctx := context.Background()
	secret := m.identity(ns, name)
	oscT := &infrav1.OpenStackClusterTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: infrav1.OpenStackClusterTemplateSpec{Template: infrav1.OpenStackClusterTemplateResource{Spec: m.oscSpec(secret.Name, cidr)}}}
	osmT := &infrav1.OpenStackMachineTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-control-plane"},
		Spec: infrav1.OpenStackMachineTemplateSpec{Template: infrav1.OpenStackMachineTemplateResource{Spec: infrav1.OpenStackMachineSpec{
			Flavor: ptr.To("m1.small"), Image: infrav1.ImageParam{Filter: &infrav1.ImageFilter{Name: ptr.To("never-used")}}}}}}
	kcpT := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlaneTemplate",
		"metadata": map[string]any{"namespace": ns, "name": name}, "spec": map[string]any{"template": map[string]any{"spec": map[string]any{"kubeadmConfigSpec": map[string]any{"format": "cloud-config"}}}}}}
	ref := func(apiVersion, kind, name string) clusterv1.ClusterClassTemplateReference {
		return clusterv1.ClusterClassTemplateReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
	infra := infrav1.SchemeGroupVersion.String()
	cc := &clusterv1.ClusterClass{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterClassSpec{
			Infrastructure: clusterv1.InfrastructureClass{TemplateRef: ref(infra, "OpenStackClusterTemplate", oscT.Name)},
			ControlPlane: clusterv1.ControlPlaneClass{TemplateRef: ref(kcpT.GetAPIVersion(), kcpT.GetKind(), kcpT.GetName()),
				MachineInfrastructure: clusterv1.ControlPlaneClassMachineInfrastructureTemplate{TemplateRef: ref(infra, "OpenStackMachineTemplate", osmT.Name)}},
		}}
	m.create(secret, oscT, osmT, kcpT, cc)
	opEventually(m.t, capiTimeout, "the ClusterClass reconciled", func() (bool, string) {
		if err := m.c.Get(ctx, client.ObjectKeyFromObject(cc), cc); err != nil {
			return false, err.Error()
		}
		return cc.Status.ObservedGeneration == cc.Generation, fmt.Sprintf("observed generation %d of %d, conditions %v",
			cc.Status.ObservedGeneration, cc.Generation, cc.Status.Conditions)
	})
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: podCIDRs}},
			Topology: clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: cc.Name}, Version: "v1.37.1",
				ControlPlane: clusterv1.ControlPlaneTopology{Replicas: ptr.To[int32](1)}},
		}}
	m.create(cl)
	m.t.Cleanup(func() { m.DeleteCluster(cl) })
	return cl
}

// Extension registers a Runtime Extension server at url (https, its certificate signed by ca) with Cluster API
// for the Clusters of namespace ns only, and waits until Cluster API has discovered its BeforeClusterDelete
// handler. It is unregistered at the end of the test: its failure policy Fail would hold the deletion of every
// Cluster of the namespace once its server is gone.
func (m *capiMgmt) Extension(url string, ca []byte, ns string) {
	m.t.Helper()
	ctx := context.Background()
	ec := &runtimev1.ExtensionConfig{ObjectMeta: metav1.ObjectMeta{Name: "vitals-" + ns},
		Spec: runtimev1.ExtensionConfigSpec{ClientConfig: runtimev1.ClientConfig{URL: url, CABundle: ca},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}}
	m.create(ec)
	m.t.Cleanup(func() { _ = m.c.Delete(context.Background(), ec) })
	opEventually(m.t, capiTimeout, "Cluster API's discovery of the extension's handlers", func() (bool, string) {
		if err := m.c.Get(ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
			return false, err.Error()
		}
		for _, h := range ec.Status.Handlers {
			if h.RequestHook.Hook == "BeforeClusterDelete" && h.FailurePolicy == runtimev1.FailurePolicyFail {
				return true, h.Name
			}
		}
		return false, fmt.Sprintf("handlers %+v, conditions %v", ec.Status.Handlers, ec.Status.Conditions)
	})
}

// identity is the Secret with the tenant's clouds.yaml that a Cluster's OpenStackCluster names.
func (m *capiMgmt) identity(ns, name string) *corev1.Secret {
	m.t.Helper()
	clouds, err := os.ReadFile(m.env.CloudsYAML)
	if err != nil {
		m.t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-cloud-config",
		Labels: map[string]string{"clusterctl.cluster.x-k8s.io/move": "true"}},
		Data: map[string][]byte{"clouds.yaml": clouds}}
}

// oscSpec is the OpenStackCluster of the tests (see Cluster).
func (m *capiMgmt) oscSpec(secret, cidr string) infrav1.OpenStackClusterSpec {
	return infrav1.OpenStackClusterSpec{
		IdentityRef:                infrav1.OpenStackIdentityReference{Name: secret, CloudName: "openstack"},
		ManagedSubnets:             []infrav1.SubnetSpec{{CIDR: cidr}},
		ExternalNetwork:            &infrav1.NetworkParam{ID: ptr.To(m.env.ExternalNetworkID)},
		APIServerLoadBalancer:      &infrav1.APIServerLoadBalancer{Enabled: ptr.To(true)},
		DisableAPIServerFloatingIP: ptr.To(true),
		ManagedSecurityGroups:      &infrav1.ManagedSecurityGroups{},
	}
}

func (m *capiMgmt) create(objs ...client.Object) {
	m.t.Helper()
	for _, o := range objs {
		if err := m.c.Create(context.Background(), o); err != nil {
			m.t.Fatalf("create %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// Ready waits until CAPO reports the Cluster's OpenStackCluster (the one its infrastructureRef names) ready with
// its network, subnet, router, both security groups and its API load balancer, and the Cluster's infrastructure
// provisioned; it returns the OpenStackCluster.
func (m *capiMgmt) Ready(cl *clusterv1.Cluster) *infrav1.OpenStackCluster {
	m.t.Helper()
	osc := &infrav1.OpenStackCluster{}
	opEventually(m.t, capiTimeout, "the OpenStackCluster ready and the Cluster's infrastructure provisioned", func() (bool, string) {
		got := &clusterv1.Cluster{}
		if err := m.c.Get(context.Background(), client.ObjectKeyFromObject(cl), got); err != nil {
			return false, err.Error()
		}
		if got.Spec.InfrastructureRef.Name == "" {
			return false, "the Cluster names no infrastructure yet"
		}
		if err := m.c.Get(context.Background(), client.ObjectKey{Namespace: cl.Namespace, Name: got.Spec.InfrastructureRef.Name}, osc); err != nil {
			return false, err.Error()
		}
		s := osc.Status
		msg := fmt.Sprintf("ready %v, failure %s", s.Ready, ptr.Deref(s.FailureMessage, ""))
		if !s.Ready || s.Network == nil || len(s.Network.Subnets) == 0 || s.Router == nil || s.APIServerLoadBalancer == nil ||
			s.ControlPlaneSecurityGroup == nil || s.WorkerSecurityGroup == nil {
			return false, msg
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
	infra := cl.Name
	cur := &clusterv1.Cluster{}
	if err := m.c.Get(ctx, client.ObjectKeyFromObject(cl), cur); err == nil && cur.Spec.InfrastructureRef.Name != "" {
		infra = cur.Spec.InfrastructureRef.Name
	}
	if err := m.c.Delete(ctx, cl); err != nil && !apierrors.IsNotFound(err) {
		m.t.Fatalf("delete Cluster %s/%s: %v", cl.Namespace, cl.Name, err)
	}
	opEventually(m.t, capiTimeout, "the Cluster and its OpenStackCluster gone", func() (bool, string) {
		for _, o := range []client.Object{&clusterv1.Cluster{}, &infrav1.OpenStackCluster{}} {
			name := cl.Name
			if _, ok := o.(*infrav1.OpenStackCluster); ok {
				name = infra
			}
			err := m.c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, o)
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

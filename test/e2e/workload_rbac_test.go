package e2e

// deploy/manifests/workload-rbac.yaml against the real kube-apiserver: applied under names of the test's own,
// its ServiceAccount is allowed every call of workload/rbac's Permissions and nothing next to them
// (SubjectAccessReviews), and a client with its token makes the operator's own calls (the read paths of
// deorbit, flight and remediate; the writes as server-side dry runs). wlRBAC gives other scenarios the same
// least-privileged kubeconfig for their passes: cloudheal's (TestOperatorCloudHealLBConvergenceSim) and flight's
// node repair (newFNFixture) reach their workload cluster only as the manifest's ServiceAccount.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/workload/rbac"
)

// wlRBACAccess is the manifest applied into one cluster under the test's own names.
type wlRBACAccess struct {
	SA, Namespace, TokenSecret string
	// Kubeconfig is inline (the admin kubeconfig's server and CA) with a token of the ServiceAccount
	// (TokenRequest, an hour); Config is the same as a client configuration.
	Kubeconfig []byte
	Config     *rest.Config
}

// User is the ServiceAccount's user name.
func (a wlRBACAccess) User() string { return "system:serviceaccount:" + a.Namespace + ":" + a.SA }

// wlRBAC applies deploy/manifests/workload-rbac.yaml into the cluster of the admin kubeconfig (inline): the
// ServiceAccount and its token Secret in namespace ns (for kube-system), every other name with a random suffix so
// that it cannot collide with another test's; all removed in t.Cleanup.
func wlRBAC(t testing.TB, adminKubeconfig []byte, ns string) wlRBACAccess {
	t.Helper()
	ctx := context.Background()
	admin, err := clientcmd.RESTConfigFromKubeConfig(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(opRepoRoot(), filepath.FromSlash(rbac.ManifestPath)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := rbac.ParseManifest(data)
	if err != nil {
		t.Fatalf("%s: %v", rbac.ManifestPath, err)
	}
	suffix := "-" + opRandHex(4)
	sa := m.ServiceAccount.DeepCopy()
	sa.Name, sa.Namespace = sa.Name+suffix, ns
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}
	for _, s := range m.ClusterRoleBinding.Subjects {
		if s.Name != m.ServiceAccount.Name || s.Namespace != m.ServiceAccount.Namespace {
			t.Fatalf("%s: the ClusterRoleBinding binds %s %s/%s, not the ServiceAccount", rbac.ManifestPath, s.Kind, s.Namespace, s.Name)
		}
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), sa.Name, metav1.DeleteOptions{})
	})
	out := wlRBACAccess{SA: sa.Name, Namespace: ns}
	if m.TokenSecret != nil {
		sec := m.TokenSecret.DeepCopy()
		sec.Name, sec.Namespace = sec.Name+suffix, ns
		sec.Annotations[corev1.ServiceAccountNameKey] = sa.Name
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create the token Secret: %v", err)
		}
		out.TokenSecret = sec.Name
		t.Cleanup(func() { _ = cs.CoreV1().Secrets(ns).Delete(context.Background(), sec.Name, metav1.DeleteOptions{}) })
	}
	cr := m.ClusterRole.DeepCopy()
	cr.Name += suffix
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRole: %v", err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{}) })
	crb := m.ClusterRoleBinding.DeepCopy()
	crb.Name += suffix
	crb.RoleRef.Name, crb.Subjects = cr.Name, subjects
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	for i := range m.Roles {
		r := m.Roles[i].DeepCopy()
		r.Name += suffix
		// the system namespaces (kube-node-lease) are made by the kube-apiserver itself, just after its start
		opEventually(t, wlCloudTimeout, "create Role "+r.Namespace+"/"+r.Name, func() (bool, string) {
			_, err := cs.RbacV1().Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		t.Cleanup(func() {
			_ = cs.RbacV1().Roles(r.Namespace).Delete(context.Background(), r.Name, metav1.DeleteOptions{})
		})
	}
	for i := range m.RoleBindings {
		b := m.RoleBindings[i].DeepCopy()
		b.Name += suffix
		b.RoleRef.Name, b.Subjects = b.RoleRef.Name+suffix, subjects
		if _, err := cs.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create RoleBinding %s/%s: %v", b.Namespace, b.Name, err)
		}
		t.Cleanup(func() {
			_ = cs.RbacV1().RoleBindings(b.Namespace).Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		})
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request a token of ServiceAccount %s/%s: %v", ns, sa.Name, err)
	}
	out.Kubeconfig = wlTokenKubeconfig(t, adminKubeconfig, tr.Status.Token)
	if out.Config, err = clientcmd.RESTConfigFromKubeConfig(out.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	return out
}

// wlTokenKubeconfig is the admin kubeconfig (inline) with token as its current user's only credential.
func wlTokenKubeconfig(t testing.TB, adminKubeconfig []byte, token string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		t.Fatal("the admin kubeconfig has no current context")
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"vitals-operator": {Token: token}}
	kctx.AuthInfo = "vitals-operator"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wlRBACDenied lie outside the operator's needs: each must be refused.
var wlRBACDenied = []rbac.Access{
	{Resource: "secrets", Verb: "get"},
	{Resource: "secrets", Verb: "list"},
	{Namespace: "kube-system", Resource: "secrets", Verb: "list"},
	{Namespace: "kube-system", Resource: "secrets", Verb: "watch"},
	{Namespace: "kube-system", Resource: "secrets", Verb: "update"},
	{Resource: "configmaps", Verb: "get"},
	{Group: "apps", Resource: "deployments", Verb: "delete"},
	{Group: "apps", Resource: "daemonsets", Verb: "list"},
	{Resource: "nodes", Verb: "delete"},
	{Resource: "nodes/proxy", Verb: "get"},
	{Resource: "pods", Verb: "delete"},
	{Resource: "pods", Verb: "create"},
	{Resource: "pods/exec", Verb: "create"},
	{Resource: "persistentvolumes", Verb: "delete"},
	{Resource: "events", Verb: "delete"},
	{Resource: "serviceaccounts/token", Verb: "create"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "escalate"},
	{Namespace: "kube-system", Group: "coordination.k8s.io", Resource: "leases", Verb: "list"},
	{Namespace: "kube-node-lease", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
}

// wlReview asks the API whether user may make the access.
func wlReview(t testing.TB, cs kubernetes.Interface, a wlRBACAccess, x rbac.Access) (bool, string) {
	t.Helper()
	spec := authorizationv1.SubjectAccessReviewSpec{User: a.User(),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + a.Namespace, "system:authenticated"}}
	if x.URL != "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: x.URL, Verb: x.Verb}
	} else {
		res, sub, _ := strings.Cut(x.Resource, "/")
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: x.Namespace, Group: x.Group,
			Resource: res, Subresource: sub, Verb: x.Verb}
	}
	r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("review %s: %v", x, err)
	}
	return r.Status.Allowed, r.Status.Reason
}

// TestWorkloadRBACManifest: in the workload cluster (testenv.Workload, its kube-controller-manager filling the
// token Secret), the manifest's ServiceAccount may make every call of workload/rbac's Permissions and none of
// wlRBACDenied, and a client with the Secret's token (as docs/operator.md builds the kubeconfig) makes the
// operator's calls: reads as the controllers make them, writes as server-side dry runs.
func TestWorkloadRBACManifest(t *testing.T) {
	parallel(t, &workloadCluster)
	w := wlOpen(t)
	wlRBACProve(t, w.cs, testenv.InlineKubeconfig(t, w.env.Kubeconfig), w.Namespace("vitals-rbac"), true)
}

// TestWorkloadRBACManifestPrivate: the same in a private kube-apiserver (no controller-manager: a TokenRequest
// token; no snapshot CRDs), with a Node of the test's own.
func TestWorkloadRBACManifestPrivate(t *testing.T) {
	parallel(t)
	priv := testenv.PrivateKube(t)
	cs, err := kubernetes.NewForConfig(priv.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "vitals-rbac-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wlRBACProve(t, cs, testenv.InlineKubeconfig(t, priv.KubeconfigPath()), ns.Name, false)
}

// wlRBACProve applies the manifest through wlRBAC (the ServiceAccount in ns), reviews every access of
// workload/rbac's Permissions and of wlRBACDenied, and makes the operator's calls with the ServiceAccount's token:
// the token controller's (its Secret, fromSecret) or a TokenRequest's.
func wlRBACProve(t *testing.T, cs kubernetes.Interface, adminKubeconfig []byte, ns string, fromSecret bool) {
	t.Helper()
	ctx := context.Background()
	a := wlRBAC(t, adminKubeconfig, ns)
	t.Run("allowed", func(t *testing.T) {
		for _, x := range rbac.Of(rbac.Permissions) {
			if ok, why := wlReview(t, cs, a, x); !ok {
				t.Errorf("%s: refused (%s)", x, why)
			}
		}
	})
	t.Run("denied", func(t *testing.T) {
		needed := rbac.Of(rbac.Permissions)
		for _, x := range wlRBACDenied {
			if slices.Contains(needed, x) {
				t.Fatalf("%s is in wlRBACDenied and in workload/rbac's Permissions", x)
			}
			if ok, _ := wlReview(t, cs, a, x); ok {
				t.Errorf("%s: allowed, outside the operator's needs", x)
			}
		}
	})
	cfg := a.Config
	if fromSecret {
		// the kubeconfig as the docs build it: the token the token controller put into the manifest's Secret
		var token string
		opEventually(t, wlCloudTimeout, "the token Secret filled in", func() (bool, string) {
			s, err := cs.CoreV1().Secrets(ns).Get(ctx, a.TokenSecret, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			token = string(s.Data[corev1.ServiceAccountTokenKey])
			return token != "", "no token yet"
		})
		var err error
		if cfg, err = clientcmd.RESTConfigFromKubeConfig(wlTokenKubeconfig(t, adminKubeconfig, token)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{}) // its REST mapper's discovery with the token too
	if err != nil {
		t.Fatalf("client with the ServiceAccount's token: %v", err)
	}
	t.Run("calls", func(t *testing.T) { wlRBACCalls(t, c, ns) })
}

// wlRBACCalls makes the operator's calls through c (the ServiceAccount's): the read paths of the controllers as
// they run them, every write as a server-side dry run (authorized as the write itself; nothing is stored), and
// calls outside the manifest, which must be forbidden. ns is a namespace of the test's own.
func wlRBACCalls(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	// allowed, or absent: a 404 comes after the authorization, a 403 before it
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("%s: %v", what, err)
		}
	}
	var nl corev1.NodeList
	must("list Nodes", c.List(ctx, &nl))
	if len(nl.Items) == 0 {
		t.Fatal("the cluster has no Node")
	}
	node := nl.Items[0]
	_, err := deorbit.KeepLedger(ctx, c)
	must("deorbit's keep ledger", err)
	pods, err := nodes.NodePods(ctx, c, node.Name)
	must("flight's pods of a node", err)
	_, err = nodes.Budgets(ctx, c, append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}))
	must("flight's PodDisruptionBudgets", err)
	_, err = nodes.EtcdPods(ctx, c)
	must("etcd's pods", err)
	// a server no Node names: Recheck reads it, then the Nodes, uncached, and finds nothing against the step
	_, err = nodes.Recheck(ctx, c, wlServers{}, nodes.Want{Server: "vitals-rbac-" + opRandHex(4)})
	must("nodes.Recheck", err)
	var leases coordinationv1.LeaseList
	must("list the node Leases", c.List(ctx, &leases, client.InNamespace(corev1.NamespaceNodeLease)))
	var svcs corev1.ServiceList
	must("list Services", c.List(ctx, &svcs))
	var pvs corev1.PersistentVolumeList
	must("list PersistentVolumes", c.List(ctx, &pvs))

	dry := client.DryRunAll
	var fresh corev1.Node
	must("get the Node", c.Get(ctx, types.NamespacedName{Name: node.Name}, &fresh))
	must("cordon the Node (dry run)", c.Patch(ctx, fresh.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`)), dry))
	// an update holds the Node's resourceVersion: read again when another writer came between
	must("taint the Node (dry run)", retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := c.Get(ctx, types.NamespacedName{Name: node.Name}, &n); err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, nodes.TaintOutOfService)
		return c.Update(ctx, &n, dry)
	}))
	cond := `{"status":{"conditions":[{"type":"` + string(nodes.ConditionDrained) + `","status":"False","reason":"Test"}]}}`
	must("a condition of the Node (dry run)", c.Status().Patch(ctx, fresh.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(cond)), dry))
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "web."},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", Namespace: ns, Name: "web"}, Reason: "Test", Type: corev1.EventTypeNormal}
	must("an Event (dry run)", c.Create(ctx, ev, dry))
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}
	allowed("evict a pod", c.SubResource("eviction").Create(ctx, gone, &policyv1.Eviction{ObjectMeta: gone.ObjectMeta}, client.DryRunAll))
	allowed("delete a claim", c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}, dry))
	allowed("delete a Service", c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}, dry))
	snap := &unstructured.Unstructured{}
	snap.SetGroupVersionKind(deorbit.VolumeSnapshotList.GroupVersion().WithKind("VolumeSnapshot"))
	snap.SetNamespace(ns)
	snap.SetName("gone")
	if err := c.Delete(ctx, snap, dry); !meta.IsNoMatchError(err) { // no snapshot CRDs: nothing to authorize
		allowed("delete a VolumeSnapshot", err)
	}

	// credentials: a consumer Secret of kube-system, single GETs; kube-system's pods
	allowed("get a consumer Secret in kube-system", c.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "cloud-config-" + opRandHex(4)}, &corev1.Secret{}))
	must("list kube-system's pods", c.List(ctx, &corev1.PodList{}, client.InNamespace("kube-system"), client.Limit(10)))

	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "anything"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("get a Secret outside kube-system: %v, want Forbidden", err)
	}
	if err := c.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")); !apierrors.IsForbidden(err) {
		t.Errorf("list kube-system's Secrets: %v, want Forbidden", err)
	}
	if err := c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}, dry); !apierrors.IsForbidden(err) {
		t.Errorf("delete a Deployment: %v, want Forbidden", err)
	}
}

// wlServers answers every server as an ACTIVE one of that ID.
type wlServers struct{}

func (wlServers) GetServer(_ context.Context, id string) (*openstack.Server, error) {
	return &openstack.Server{ID: id, Status: "ACTIVE"}, nil
}

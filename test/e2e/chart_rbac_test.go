package e2e

// The chart's RBAC proven by use: its ServiceAccounts, roles and bindings are applied to the real
// kube-apiserver, and the operator (in process) and the agent (its binary) run against it as those
// ServiceAccounts, with their own tokens, through a reverse proxy that records every API request and its answer.
// A request the API server forbids is a missing permission; a permission granted that no request of the
// run needed (and that is not listed below with the reason the run cannot show it) is an extra one.
// Either fails the test.

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
)

// rbacPerm is one permission: a verb on a resource ("secrets", "nodes/status") of an API group.
type rbacPerm struct{ Group, Resource, Verb string }

func (p rbacPerm) String() string {
	g := p.Group
	if g == "" {
		g = "core"
	}
	return fmt.Sprintf("%s %s/%s", p.Verb, g, p.Resource)
}

// rbacCall is one API request a ServiceAccount made, the status it got, and the API server's priority
// level for it (API Priority and Fairness: the UID in the answer's X-Kubernetes-PF-PriorityLevel-UID).
type rbacCall struct {
	rbacPerm
	Namespace     string
	Code          int
	PriorityLevel string
}

// rbacRecorder is the proxy's transport to the API server: it records every resource request.
type rbacRecorder struct {
	next    http.RoundTripper
	infos   *apirequest.RequestInfoFactory
	mu      sync.Mutex
	calls   map[string][]rbacCall // by ServiceAccount token
	byToken map[string]string     // token -> ServiceAccount name
}

func (r *rbacRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	info, ierr := r.infos.NewRequestInfo(req)
	if ierr != nil || !info.IsResourceRequest {
		return resp, err
	}
	res := info.Resource
	if info.Subresource != "" {
		res += "/" + info.Subresource
	}
	c := rbacCall{rbacPerm: rbacPerm{Group: info.APIGroup, Resource: res, Verb: info.Verb}, Namespace: info.Namespace}
	if resp != nil {
		c.Code, c.PriorityLevel = resp.StatusCode, resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
	}
	sa := r.byToken[strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")]
	r.mu.Lock()
	r.calls[sa] = append(r.calls[sa], c)
	if info.Verb == "watch" && req.URL.Query().Get("sendInitialEvents") == "true" {
		// A watch-list stream stands for the list an informer makes first where the API server streams
		// none: it needs list too.
		c.Verb = "list"
		r.calls[sa] = append(r.calls[sa], c)
	}
	r.mu.Unlock()
	return resp, err
}

func (r *rbacRecorder) callsOf(sa string) []rbacCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rbacCall(nil), r.calls[sa]...)
}

// chartRBAC is the chart's RBAC applied to the real API server for one release.
type chartRBAC struct {
	t        *testing.T
	admin    *rest.Config
	ns       string
	release  string
	granted  map[string]map[rbacPerm][]string // ServiceAccount -> permission -> namespaces ("*": all)
	rec      *rbacRecorder
	proxyURL string
	proxyCA  []byte // PEM
}

// applyChartRBAC renders the chart (release in ns, with values) and applies its ServiceAccounts, roles and
// bindings for real; they are deleted when t ends. Clients made by token() reach the API server through a
// proxy that records their requests.
func applyChartRBAC(t *testing.T, admin *rest.Config, helm, ns, values string) *chartRBAC {
	t.Helper()
	release := "r" + opRandHex(4)
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, []byte(runHelm(t, helm, "template", release, chartDir(), "--namespace", ns, "-f", f)))
	dyn, err := dynamic.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	cr := &chartRBAC{t: t, admin: admin, ns: ns, release: release, granted: map[string]map[rbacPerm][]string{}}
	roles := map[string][]any{} // kind/namespace/name -> rules
	resources := map[string]string{"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
		"ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings", "FlowSchema": "flowschemas"}
	for _, u := range objs {
		res, ok := resources[u.GetKind()]
		if !ok {
			continue
		}
		gv := schema.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"}
		switch u.GetKind() {
		case "ServiceAccount":
			gv = schema.GroupVersion{Version: "v1"}
		case "FlowSchema":
			gv = schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(gv.WithResource(res))
		if strings.HasPrefix(u.GetKind(), "Role") || u.GetKind() == "ServiceAccount" {
			if u.GetNamespace() == "" {
				u.SetNamespace(ns)
			}
			ri = dyn.Resource(gv.WithResource(res)).Namespace(u.GetNamespace())
		}
		data, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		force := true
		if _, err := ri.Patch(context.Background(), u.GetName(), "application/apply-patch+yaml", data,
			metav1.PatchOptions{FieldManager: "vitals-e2e-rbac", Force: &force}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		name := u.GetName()
		t.Cleanup(func() {
			if err := ri.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s: %v", res, name, err)
			}
		})
		if u.GetKind() == "Role" || u.GetKind() == "ClusterRole" {
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			roles[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = rules
		}
	}
	for _, u := range objs {
		if u.GetKind() != "RoleBinding" && u.GetKind() != "ClusterRoleBinding" {
			continue
		}
		kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		where, roleNS := "*", ""
		if u.GetKind() == "RoleBinding" {
			where = u.GetNamespace()
		}
		if kind == "Role" {
			roleNS = u.GetNamespace()
		}
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			sm, _ := s.(map[string]any)
			sa, _ := sm["name"].(string)
			if cr.granted[sa] == nil {
				cr.granted[sa] = map[rbacPerm][]string{}
			}
			for _, r := range roles[kind+"/"+roleNS+"/"+name] {
				rule, _ := r.(map[string]any)
				groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
				res, _, _ := unstructured.NestedStringSlice(rule, "resources")
				verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
				if names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames"); len(names) > 0 {
					t.Errorf("%s %s: resourceNames %v (this test does not model them)", kind, name, names)
				}
				for _, g := range groups {
					for _, rs := range res {
						for _, v := range verbs {
							p := rbacPerm{g, rs, v}
							cr.granted[sa][p] = append(cr.granted[sa][p], where)
						}
					}
				}
			}
		}
	}

	rt, err := rest.TransportFor(&rest.Config{Host: admin.Host, TLSClientConfig: admin.TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	cr.rec = &rbacRecorder{next: rt, calls: map[string][]rbacCall{}, byToken: map[string]string{},
		infos: &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}}
	target, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport, rp.FlushInterval = cr.rec, -1 // watches stream
	// TLS: clients loading a kubeconfig send no credentials to a plain HTTP server.
	srv := httptest.NewTLSServer(rp)
	t.Cleanup(srv.Close)
	cr.proxyURL = srv.URL
	cr.proxyCA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return cr
}

// token returns a client configuration that authenticates as the chart's ServiceAccount sa with a token
// of its own (TokenRequest), through the recording proxy.
func (cr *chartRBAC) token(sa string) *rest.Config {
	cr.t.Helper()
	cs, err := kubernetes.NewForConfig(cr.admin)
	if err != nil {
		cr.t.Fatal(err)
	}
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(cr.ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		cr.t.Fatalf("token of ServiceAccount %s: %v", sa, err)
	}
	cr.rec.mu.Lock()
	cr.rec.byToken[tr.Status.Token] = sa
	cr.rec.mu.Unlock()
	return &rest.Config{Host: cr.proxyURL, BearerToken: tr.Status.Token, UserAgent: "vitals-e2e-" + sa,
		TLSClientConfig: rest.TLSClientConfig{CAData: cr.proxyCA}}
}

// kubeconfig writes a kubeconfig file for cfg (a token() configuration), for a process.
func (cr *chartRBAC) kubeconfig(cfg *rest.Config) string {
	cr.t.Helper()
	p := filepath.Join(cr.t.TempDir(), "kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, cfg.Host, base64.StdEncoding.EncodeToString(cfg.CAData), cfg.BearerToken)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		cr.t.Fatal(err)
	}
	return p
}

// forbidden lists the requests of sa the API server refused with 403.
func (cr *chartRBAC) forbidden(sa string) []string {
	var f []string
	for _, c := range cr.rec.callsOf(sa) {
		if c.Code == http.StatusForbidden {
			f = append(f, fmt.Sprintf("%s in namespace %q", c.rbacPerm, c.Namespace))
		}
	}
	slices.Sort(f)
	return slices.Compact(f)
}

// used returns the permissions the requests of sa used (allowed requests only).
func (cr *chartRBAC) used(sa string) map[rbacPerm]bool {
	used := map[rbacPerm]bool{}
	for _, c := range cr.rec.callsOf(sa) {
		if c.Code != http.StatusForbidden {
			used[c.rbacPerm] = true
		}
	}
	return used
}

// unused lists the permissions granted to sa that no request used and unexercised does not explain.
func (cr *chartRBAC) unused(sa string, unexercised map[rbacPerm]string) []string {
	used := cr.used(sa)
	var extra []string
	for p, where := range cr.granted[sa] {
		if _, ok := unexercised[p]; !ok && !used[p] {
			extra = append(extra, fmt.Sprintf("%s in %v", p, where))
		}
	}
	sort.Strings(extra)
	return extra
}

// check compares what sa did with what the chart grants it: every request must have been allowed, and
// every permission granted must have been used by a request of the run, unless unexercised names it
// (with the reason the run cannot show its use).
func (cr *chartRBAC) check(sa string, unexercised map[rbacPerm]string) {
	t := cr.t
	t.Helper()
	calls := cr.rec.callsOf(sa)
	if len(calls) == 0 {
		t.Fatalf("ServiceAccount %s made no API request", sa)
	}
	if f := cr.forbidden(sa); len(f) > 0 {
		t.Errorf("%s: forbidden (permissions the chart lacks): %s", sa, strings.Join(f, "; "))
	}
	for _, e := range cr.unused(sa, unexercised) {
		t.Errorf("%s: %s granted but never used (an extra permission)", sa, e)
	}
	used := cr.used(sa)
	for p, why := range unexercised {
		switch _, ok := cr.granted[sa][p]; {
		case !ok:
			t.Errorf("%s: the test explains why %s is not used, but the chart does not grant it", sa, p)
		case used[p]:
			t.Errorf("%s: the test explains why %s is not used, but the run used it: drop the explanation", sa, p)
		default:
			t.Logf("%s: %s granted, not used in this run: %s", sa, p, why)
		}
	}
	var granted []string
	for p, where := range cr.granted[sa] {
		granted = append(granted, fmt.Sprintf("%s in %v", p, where))
	}
	sort.Strings(granted)
	t.Logf("%s: %d requests, all allowed; granted: %s", sa, len(calls), strings.Join(granted, "; "))
}

// TestChartRBACOperator runs the operator as the chart's operator ServiceAccount: leader election (one
// replica) or sharding (more), the pause switch, a VitalsCluster with a credentials Secret proven against
// the real cloud (finalizer, status, Events) and a route pass over its real router.
func TestChartRBACOperator(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name, values string
		sharded      bool
	}{
		{"one replica leads", "operator:\n  replicas: 1\n", false},
		{"replicas shard", "operator:\n  replicas: 2\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) { testChartRBACOperator(t, tc.values, tc.sharded) })
	}
}

func testChartRBACOperator(t *testing.T, values string, sharded bool) {
	helm := testenv.Helm(t)
	admin := testenv.Kube(t)
	env := testenv.OpenStack(t)
	opInstallCRD(t, admin)
	c := opClient(t, admin)
	ns := opNamespace(t, c)
	cr := applyChartRBAC(t, admin, helm, ns, values)
	sa := cr.release + "-operator"

	auth := opAuth(t, env)
	cloud := opConnect(t, auth, nil)
	n := opNewNet(t, cloud)
	n.Port(5)
	n.SetRoutes(openstack.Route{Destination: "198.19.1.0/24", NextHop: n.IP(5)})
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		StringData: map[string]string{"clouds.yaml": opCloudsYAML(env.AuthURL, env.Username, env.Password, env.ProjectName)}}
	if err := c.Create(context.Background(), creds); err != nil {
		t.Fatal(err)
	}
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rbac"},
		Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
				RouterID: n.Router, NetworkID: n.Network, SubnetID: n.Subnet},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
			// Deorbit: the finalizer (and the permission to patch it) is on Deorbit clusters only
			DeletionPolicy: v1alpha1.DeletionPolicyDeorbit,
			Controllers: v1alpha1.ControllersSpec{RouteGC: v1alpha1.RouteGCSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: 2 * time.Second}},
				AddressSources: []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts},
			}},
		},
	}
	if err := c.Create(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The operator has stopped (Cleanup runs in reverse order): release the finalizer it set.
		var got v1alpha1.VitalsCluster
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(cl), &got); err == nil && len(got.Finalizers) > 0 {
			got.Finalizers = nil
			_ = c.Update(context.Background(), &got)
		}
	})

	// used when the controllers' status writes to the cluster conflict, which this run may or may not see
	racy := rbacPerm{"vitals.vitalsproject.io", "vitalsclusters", "get"}
	unexercised := map[rbacPerm]string{
		{"events.k8s.io", "events", "patch"}: "the series of an Event repeated after its first one is patched",
		racy:                                 "a status write that conflicted reads the cluster again",
	}
	o := operator.Options{
		RestConfig: cr.token(sa), Namespace: ns, Identity: "rbac",
		LeaderElect: true, LeaderElectionNamespace: ns, LeaderElectionID: "vitals-operator",
		// a safety margin (lease duration - renew deadline) of 5 s: every write may take the 4 s of
		// WriteTimeout on a loaded test machine
		LeaseDuration: 8 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		WriteTimeout: 4 * time.Second, Cloud: &auth, CheckInterval: time.Second, CheckTimeout: 10 * time.Second,
	}
	// used only when the replica leaves (it deletes its member Lease): checked after the stop
	atStop := map[rbacPerm]string{}
	if sharded {
		o.LeaderElect = false
		o.Sharding = &operator.Sharding{LeaseDuration: 8 * time.Second, RenewInterval: 500 * time.Millisecond, SafetyMargin: 5 * time.Second}
		atStop[rbacPerm{"coordination.k8s.io", "leases", "delete"}] = "a leaving replica deletes its member Lease"
	}
	whileRunning := maps.Clone(unexercised)
	maps.Copy(whileRunning, atStop)
	run := opStart(t, o)
	opEventually(t, 2*time.Minute, "the operator leads (or holds its ranges), proves the cluster, runs route passes and uses each of its permissions", func() (bool, string) {
		if f := cr.forbidden(sa); len(f) > 0 {
			t.Fatalf("%s: forbidden (permissions the chart lacks): %s", sa, strings.Join(f, "; "))
		}
		if !sharded && !run.op.Elected() {
			return false, "not elected"
		}
		if sharded {
			if held, _ := run.op.Shard().Held(); len(held) == 0 {
				return false, "no shard range held"
			}
		}
		var got v1alpha1.VitalsCluster
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(cl), &got); err != nil {
			return false, err.Error()
		}
		var conds []string
		verified := false
		for _, cd := range got.Status.Conditions {
			conds = append(conds, cd.Type+"="+string(cd.Status))
			verified = verified || (cd.Type == v1alpha1.ConditionCloudVerified && cd.Status == metav1.ConditionTrue)
		}
		if !verified || len(got.Finalizers) == 0 || got.Status.RouteGC == nil || got.Status.RouteGC.ObservedGeneration != got.Generation {
			return false, fmt.Sprintf("conditions %v, finalizers %v", conds, got.Finalizers)
		}
		u := cr.unused(sa, whileRunning)
		return len(u) == 0, fmt.Sprintf("not used yet: %v", u)
	})
	run.stop()
	select {
	case err := <-run.done:
		run.done <- err // for opStart's cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("operator did not stop")
	}
	if cr.used(sa)[racy] {
		delete(unexercised, racy)
	}
	cr.check(sa, unexercised)
	cr.leasesAt(sa, "leader-election")
}

// leasesAt checks that the API server served every Lease request of sa at the priority level named pl
// (the chart's FlowSchema), not behind the ServiceAccount's other requests.
func (cr *chartRBAC) leasesAt(sa, pl string) {
	cr.t.Helper()
	dyn, err := dynamic.NewForConfig(cr.admin)
	if err != nil {
		cr.t.Fatal(err)
	}
	level, err := dyn.Resource(schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1",
		Resource: "prioritylevelconfigurations"}).Get(context.Background(), pl, metav1.GetOptions{})
	if err != nil {
		cr.t.Fatalf("priority level %s: %v", pl, err)
	}
	n := 0
	for _, c := range cr.rec.callsOf(sa) {
		if c.Group != "coordination.k8s.io" || c.Resource != "leases" || c.Code == 0 {
			continue // not a Lease request, or one without an answer (cancelled at the stop)
		}
		n++
		if c.PriorityLevel != string(level.GetUID()) {
			cr.t.Errorf("%s %s in %s: served at priority level %q, want %s (%s)", c.Verb, c.Resource, c.Namespace, c.PriorityLevel, pl, level.GetUID())
		}
	}
	if n == 0 {
		cr.t.Errorf("%s made no Lease request", sa)
	}
}

// TestChartRBACAgent runs the agent's binary as the chart's agent ServiceAccount on a Node object: it
// reads its Node, writes its conditions, follows kubelet Events and the pods of its node, and records the
// Events of failed CNI ADDs (twice the same one: the second is a patch of the first's count). With the
// discovered peers on, it also lists and watches the canaries' EndpointSlices in the release's namespace.
func TestChartRBACAgent(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name, values string
		peers        bool
	}{
		{"defaults", "agent:\n  enabled: true\n", false},
		{"peers", "agent:\n  enabled: true\n  connectivity:\n    peers:\n      enabled: true\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) { testChartRBACAgent(t, tc.values, tc.peers) })
	}
}

func testChartRBACAgent(t *testing.T, values string, peers bool) {
	helm := testenv.Helm(t)
	admin := testenv.Kube(t)
	c := opClient(t, admin)
	ns := opNamespace(t, c)
	cr := applyChartRBAC(t, admin, helm, ns, values)
	sa := cr.release + "-agent"
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	node := "rbac-" + opRandHex(4)
	agentCreateNode(t, cs, node)

	args := []string{"--kubeconfig", cr.kubeconfig(cr.token(sa)), "--cni-failure-mode", "consecutive"}
	if peers {
		// As the chart's DaemonSet passes them (agent-daemonset.yaml); no canary needs to connect.
		args = append(args, "--connectivity-canary-socket", filepath.Join(agentTempDir(t), "canary.sock"),
			"--connectivity-peers-service", ns+"/"+cr.release+"-agent-canary")
	}
	p := startAgentProcess(t, node, "", args...)
	p.waitStatus(t, "/alive", http.StatusOK)
	bin := agentBinary(t)
	for i := 0; i < 2; i++ {
		out, err := exec.Command(bin, "report", "--socket", p.socket, "--op", "ADD", "--result", "failure",
			"--pod", "default/rbac", "--error", "failed to allocate for range 0").CombinedOutput()
		if err != nil {
			t.Fatalf("vitals-agent report: %v\n%s", err, out)
		}
	}
	opEventually(t, time.Minute, "the agent writes PodNetworkHealthy=False and uses each of its permissions", func() (bool, string) {
		if f := cr.forbidden(sa); len(f) > 0 {
			p.stop(t, os.Interrupt) // before reading its log
			t.Fatalf("%s: forbidden (permissions the chart lacks): %s\nagent log:\n%s", sa, strings.Join(f, "; "), p.stderr.String())
		}
		if cond := agentCondition(t, cs, node, "PodNetworkHealthy"); cond.Status != corev1.ConditionFalse {
			return false, fmt.Sprintf("PodNetworkHealthy %q", cond.Status)
		}
		u := cr.unused(sa, nil)
		return len(u) == 0, fmt.Sprintf("not used yet: %v", u)
	})
	p.stop(t, os.Interrupt)
	cr.check(sa, nil)
}

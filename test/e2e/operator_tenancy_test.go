package e2e

// Tenancy against the real kube-apiserver, Keystone and Neutron: a second project and user are created
// in the real Keystone, and each refusal is shown with its CloudVerified condition, its Event, and no
// change on the cloud (the route collector, resolving through the same tenancy, leaves the routes alone).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/controllers/routegc"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// opTenant is a second project with a member user in the real Keystone, deleted at the end.
type opTenant struct {
	ProjectID string
	Auth      openstack.Auth
	Cloud     *openstack.Cloud
	// CloudsYAML holds the tenant's credentials, as a credentials Secret gives them.
	CloudsYAML string
}

func opNewTenant(t testing.TB, admin *openstack.Cloud, env testenv.OpenStackEnv) *opTenant {
	t.Helper()
	ctx := context.Background()
	ic, err := admin.Client(openstack.ServiceIdentity)
	if err != nil {
		t.Fatal(err)
	}
	name := "vitals-e2e-tenant-" + opRandHex(4)
	p, err := projects.Create(ctx, ic, projects.CreateOpts{Name: name, DomainID: "default"}).Extract()
	if err != nil {
		t.Fatalf("create project: %v", err)
	}
	t.Cleanup(func() { _ = projects.Delete(context.Background(), ic, p.ID).ExtractErr() })
	password := "pw-" + opRandHex(8)
	u, err := users.Create(ctx, ic, users.CreateOpts{Name: name, DomainID: "default", Password: password, DefaultProjectID: p.ID}).Extract()
	if err != nil {
		t.Fatalf("create user: %v", err)
	}
	t.Cleanup(func() { _ = users.Delete(context.Background(), ic, u.ID).ExtractErr() })
	pages, err := roles.List(ic, roles.ListOpts{Name: "member"}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list roles: %v", err)
	}
	rs, err := roles.ExtractRoles(pages)
	if err != nil || len(rs) == 0 {
		t.Fatalf("no member role (%v)", err)
	}
	if err := roles.Assign(ctx, ic, rs[0].ID, roles.AssignOpts{UserID: u.ID, ProjectID: p.ID}).ExtractErr(); err != nil {
		t.Fatalf("assign member role: %v", err)
	}
	cy := opCloudsYAML(env.AuthURL, name, password, name)
	a, err := openstack.AuthFromSecretCloudsYAML([]byte(cy), "openstack", "test")
	if err != nil {
		t.Fatal(err)
	}
	a.Region = env.RegionName
	return &opTenant{ProjectID: p.ID, Auth: a, Cloud: opConnect(t, a, nil), CloudsYAML: cy}
}

func opCloudsYAML(authURL, user, password, project string) string {
	return fmt.Sprintf(`clouds:
  openstack:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
`, authURL, user, password, project)
}

// tenancyFixture: the test cloud's project ("ours", with its credentials in a Secret) and a second
// project ("theirs") in the real Keystone, each with a router carrying a live and an orphaned route.
type tenancyFixture struct {
	t        *testing.T
	c        client.Client
	env      testenv.OpenStackEnv
	admin    *openstack.Cloud
	ours     *opNet
	theirs   *opNet
	tenant   *opTenant
	sgOurs   string
	sgTheirs string
	ns       string
	marker   string // in every Secret value that is not a clouds.yaml: must appear nowhere
	clock    *clocktesting.FakeClock
	logs     *lockedBuffer
	log      logr.Logger
}

// newTenancyFixture builds the fixture; the second project only when withTenant.
func newTenancyFixture(t *testing.T, withTenant bool) *tenancyFixture {
	t.Helper()
	cfg := testenv.Kube(t)
	env := testenv.OpenStack(t)
	opInstallCRD(t, cfg)
	f := &tenancyFixture{t: t, c: opClient(t, cfg), env: env, marker: "s3cr3t-" + opRandHex(6), logs: &lockedBuffer{}}
	f.log = logr.FromSlogHandler(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.clock = clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	auth := opAuth(t, env)
	f.admin = opConnect(t, auth, nil)
	f.ours = opNewNet(t, f.admin)
	f.sgOurs = f.securityGroup(f.admin)
	nets := []*opNet{f.ours}
	if withTenant {
		f.tenant = opNewTenant(t, f.admin, env)
		f.theirs = opNewNet(t, f.tenant.Cloud)
		f.sgTheirs = f.securityGroup(f.tenant.Cloud)
		nets = append(nets, f.theirs)
	}
	for _, n := range nets {
		n.Port(5)
		n.SetRoutes(openstack.Route{Destination: "198.19.1.0/24", NextHop: n.IP(5)}, openstack.Route{Destination: "198.19.2.0/24", NextHop: n.IP(99)})
	}
	f.ns = opNamespace(t, f.c)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "creds"}, StringData: map[string]string{
		"clouds.yaml": opCloudsYAML(env.AuthURL, env.Username, env.Password, env.ProjectName),
		"token":       f.marker + ": [not yaml",
		"tls.key":     "-----BEGIN PRIVATE KEY-----\n" + f.marker + "\n-----END PRIVATE KEY-----\n",
		"unsafe": "clouds:\n  openstack:\n    cacert: /var/run/secrets/kubernetes.io/serviceaccount/token\n    auth:\n      auth_url: " +
			env.AuthURL + "\n      username: " + env.Username + "\n      password: " + env.Password + "\n",
	}}
	if err := f.c.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *tenancyFixture) securityGroup(cloud *openstack.Cloud) string {
	f.t.Helper()
	nc, err := cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		f.t.Fatal(err)
	}
	name := "vitals-e2e-nodes-" + opRandHex(4)
	g, err := groups.Create(context.Background(), nc, groups.CreateOpts{Name: name}).Extract()
	if err != nil {
		f.t.Fatalf("create security group: %v", err)
	}
	f.t.Cleanup(func() { _ = groups.Delete(context.Background(), nc, g.ID).ExtractErr() })
	return name
}

// verifier is the operator's tenancy with the test's options.
func (f *tenancyFixture) verifier(mutate func(*tenancy.Options)) *tenancy.Verifier {
	o := tenancy.Options{
		Secrets: f.c, Clusters: f.c, TrustedAuthURLs: []string{f.env.AuthURL},
		Logger: slog.New(logr.ToSlogHandler(f.log)),
	}
	if mutate != nil {
		mutate(&o)
	}
	return tenancy.NewVerifier(o)
}

// cluster creates a VitalsCluster over our router with our credentials Secret, then mutated.
func (f *tenancyFixture) cluster(name string, mutate func(*v1alpha1.VitalsCluster)) client.ObjectKey {
	f.t.Helper()
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{
				CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
				RouterID:             f.ours.Router, NetworkID: f.ours.Network, SubnetID: f.ours.Subnet, SecurityGroupName: f.sgOurs,
			},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
			Controllers: v1alpha1.ControllersSpec{RouteGC: v1alpha1.RouteGCSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Minute}},
				AddressSources: []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts},
			}},
		},
	}
	if mutate != nil {
		mutate(cl)
	}
	if err := f.c.Create(context.Background(), cl); err != nil {
		f.t.Fatalf("create cluster: %v", err)
	}
	return client.ObjectKeyFromObject(cl)
}

// run resolves the cluster with the access controller, then runs two route passes far enough apart to
// remove a proven orphan, all through v. It returns the cluster and the Events recorded.
func (f *tenancyFixture) run(v *tenancy.Verifier, key client.ObjectKey) (*v1alpha1.VitalsCluster, []string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(logf.IntoContext(context.Background(), f.log), 3*time.Minute)
	defer cancel()
	rec := events.NewFakeRecorder(100)
	policy, err := remediation.New(remediation.Options{Clock: f.clock, Recorder: rec})
	if err != nil {
		f.t.Fatal(err)
	}
	recorders := func(string) events.EventRecorder { return rec }
	acc, err := access.New(&pass.Deps{Client: f.c, Tenancy: v, Checks: policy.Checks(), Recorder: recorders, Clock: f.clock}, access.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := acc.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		f.t.Fatalf("access reconcile: %v", err)
	}
	gc, err := routegc.New(&pass.Deps{Client: f.c, Tenancy: v, Policy: policy, Clock: f.clock, Recorder: recorders}, routegc.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	// Two passes more than the minimum proof age apart: a proven orphan of a verified cluster goes.
	for range 2 {
		if _, err := gc.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			f.t.Fatalf("route pass: %v", err)
		}
		f.clock.Step(10 * time.Minute)
	}
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, key, &cl); err != nil {
		f.t.Fatal(err)
	}
	var evs []string
	for {
		select {
		case e := <-rec.Events:
			evs = append(evs, e)
		default:
			return &cl, evs
		}
	}
}

func TestOperatorTenancyRefusals(t *testing.T) {
	parallel(t)
	f := newTenancyFixture(t, true)
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.ours.IP(99)}
	theirOrphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.theirs.IP(99)}
	operatorCloud := func(o *tenancy.Options) {
		o.Operator = func(context.Context) (tenancy.Connection, error) { return f.admin, nil }
	}
	noSecret := func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef = nil }
	key := func(k string) func(*v1alpha1.VitalsCluster) {
		return func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Key = k }
	}
	tests := []struct {
		name    string
		opts    func(*tenancy.Options)
		cluster func(*v1alpha1.VitalsCluster)
		reason  string
		// msg is a part of the condition's message.
		msg string
	}{
		{name: "foreign router", reason: tenancy.ReasonForeignResource, msg: "router " + f.theirs.Router,
			cluster: func(c *v1alpha1.VitalsCluster) {
				c.Spec.OpenStack.RouterID = f.theirs.Router
				c.Spec.OpenStack.NetworkID, c.Spec.OpenStack.SubnetID, c.Spec.OpenStack.SecurityGroupName = "", "", ""
			}},
		{name: "foreign network", reason: tenancy.ReasonForeignResource, msg: "network " + f.theirs.Network,
			cluster: func(c *v1alpha1.VitalsCluster) {
				c.Spec.OpenStack.NetworkID, c.Spec.OpenStack.SubnetID = f.theirs.Network, ""
			}},
		{name: "foreign subnet", reason: tenancy.ReasonForeignResource, msg: "subnet " + f.theirs.Subnet,
			cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.SubnetID = f.theirs.Subnet }},
		{name: "foreign security group", reason: tenancy.ReasonForeignResource, msg: f.sgTheirs,
			cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.SecurityGroupName = f.sgTheirs }},
		{name: "foreign project ID", reason: tenancy.ReasonForeignProject, msg: f.tenant.ProjectID,
			cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.ProjectID = f.tenant.ProjectID }},
		{name: "wide CIDR", reason: tenancy.ReasonPodCIDRTooWide, msg: "0.0.0.0/0",
			cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = []v1alpha1.CIDR{"0.0.0.0/0"} }},
		{name: "missing credentials", reason: tenancy.ReasonMissingCredentials, cluster: noSecret},
		{name: "untrusted namespace with operator credentials", reason: tenancy.ReasonUntrustedNamespace, msg: f.ns,
			opts: func(o *tenancy.Options) { operatorCloud(o); o.TrustedNamespaces = []string{"elsewhere"} }, cluster: noSecret},
		{name: "a Secret that does not exist", reason: tenancy.ReasonMissingCredentials,
			cluster: func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.CredentialsSecretRef.Name = "nope" }},
		{name: "wrong Secret key", reason: tenancy.ReasonInvalidCredentials, msg: "no such key", cluster: key("nope")},
		{name: "a Secret value that is not YAML", reason: tenancy.ReasonInvalidCredentials, msg: "not valid YAML", cluster: key("token")},
		{name: "a Secret value that is a key", reason: tenancy.ReasonInvalidCredentials, msg: "not a mapping", cluster: key("tls.key")},
		{name: "a clouds.yaml naming the ServiceAccount token", reason: tenancy.ReasonInvalidCredentials, msg: "cacert", cluster: key("unsafe")},
		{name: "an auth_url the operator does not trust on loopback", reason: tenancy.ReasonInvalidCredentials, msg: "loopback",
			opts: func(o *tenancy.Options) { o.TrustedAuthURLs = nil }},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := f.verifier(tc.opts)
			k := f.cluster(fmt.Sprintf("refused-%d", i), tc.cluster)
			cl, evs := f.run(v, k)
			c := condition(cl, v1alpha1.ConditionCloudVerified)
			if c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
				t.Fatalf("CloudVerified = %s/%s (%s); want False/%s mentioning %q", c.Status, c.Reason, c.Message, tc.reason, tc.msg)
			}
			if cl.Status.ProjectID != "" {
				t.Errorf("status.projectID %q for a refused cluster", cl.Status.ProjectID)
			}
			if !hasEvent(evs, "Warning "+tc.reason) {
				t.Errorf("no Warning %s event among %q", tc.reason, evs)
			}
			if !f.theirs.Routes()[theirOrphan] || !f.ours.Routes()[orphan] {
				t.Fatalf("a route was removed for a refused cluster: ours %v, theirs %v", f.ours.Routes(), f.theirs.Routes())
			}
			if rg := condition(cl, v1alpha1.ConditionRoutesHealthy); rg.Status == metav1.ConditionTrue {
				t.Errorf("RoutesHealthy %s/%s for a refused cluster", rg.Status, rg.Reason)
			}
			if len(cl.Finalizers) != 0 {
				t.Errorf("finalizers %v of a cluster whose deletion policy is Orphan, want none", cl.Finalizers)
			}
			f.mustNotLeak(cl, evs)
		})
	}

	// The controls: the same fixture acts for a cluster that passes, and only then.
	t.Run("own resources are verified and acted on", func(t *testing.T) {
		k := f.cluster("verified", nil)
		cl, evs := f.run(f.verifier(nil), k)
		c := condition(cl, v1alpha1.ConditionCloudVerified)
		if c.Status != metav1.ConditionTrue || c.Reason != tenancy.ReasonVerified || cl.Status.ProjectID != f.admin.ProjectID() {
			t.Fatalf("CloudVerified = %s/%s (%s), projectID %q", c.Status, c.Reason, c.Message, cl.Status.ProjectID)
		}
		if !hasEvent(evs, "Normal Verified") {
			t.Errorf("no Verified event among %q", evs)
		}
		if f.ours.Routes()[orphan] {
			t.Fatalf("the orphaned route of a verified cluster is still there after two passes")
		}
		if !f.theirs.Routes()[theirOrphan] {
			t.Fatalf("the other project's route was removed")
		}
		f.mustNotLeak(cl, evs)
	})
	t.Run("a trusted namespace uses the operator's credentials", func(t *testing.T) {
		v := f.verifier(func(o *tenancy.Options) { operatorCloud(o); o.TrustedNamespaces = []string{f.ns} })
		k := f.cluster("trusted", func(c *v1alpha1.VitalsCluster) {
			c.Spec.OpenStack.CredentialsSecretRef = nil
			c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.18.0.0/16"}
		})
		cl, _ := f.run(v, k)
		if c := condition(cl, v1alpha1.ConditionCloudVerified); c.Reason != tenancy.ReasonVerified {
			t.Fatalf("CloudVerified = %s/%s (%s)", c.Status, c.Reason, c.Message)
		}
	})
}

func TestOperatorTenancyOverlap(t *testing.T) {
	parallel(t)
	f := newTenancyFixture(t, false)
	v := f.verifier(nil)
	old := f.cluster("established", func(c *v1alpha1.VitalsCluster) { c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.18.0.0/16"} })
	cl, _ := f.run(v, old)
	if c := condition(cl, v1alpha1.ConditionCloudVerified); c.Reason != tenancy.ReasonVerified {
		t.Fatalf("the established cluster: CloudVerified = %s/%s (%s)", c.Status, c.Reason, c.Message)
	}
	// The younger cluster claims a range inside the established one's, on the same router.
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second
	young := f.cluster("younger", func(c *v1alpha1.VitalsCluster) {
		c.Spec.PodCIDRs = []v1alpha1.CIDR{"198.18.128.0/17", "198.19.0.0/16"}
	})
	cl, evs := f.run(v, young)
	c := condition(cl, v1alpha1.ConditionCloudVerified)
	if c.Reason != tenancy.ReasonPodCIDROverlap || !strings.Contains(c.Message, f.ns+"/established") {
		t.Fatalf("the younger cluster: CloudVerified = %s/%s (%s), want PodCIDROverlap naming the established one", c.Status, c.Reason, c.Message)
	}
	if !hasEvent(evs, "Warning PodCIDROverlap") {
		t.Errorf("no PodCIDROverlap event among %q", evs)
	}
	if !f.ours.Routes()[openstack.Route{Destination: "198.19.2.0/24", NextHop: f.ours.IP(99)}] {
		t.Fatalf("the younger, refused cluster removed a route")
	}
	// The established cluster keeps working.
	cl, _ = f.run(v, old)
	if c := condition(cl, v1alpha1.ConditionCloudVerified); c.Reason != tenancy.ReasonVerified {
		t.Fatalf("the established cluster after the younger came: CloudVerified = %s/%s (%s)", c.Status, c.Reason, c.Message)
	}

	// Deletion: the finalizer goes at once, and so do the cluster's check and cached connection.
	ctx := context.Background()
	checks := remediation.NewChecks(f.clock)
	acc, err := access.New(&pass.Deps{Client: f.c, Tenancy: v, Checks: checks, Clock: f.clock}, access.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acc.Reconcile(ctx, ctrl.Request{NamespacedName: old}); err != nil {
		t.Fatal(err)
	}
	if r, ok := checks.Get(old, remediation.CheckCloud); !ok || r.Err != nil {
		t.Fatalf("cloud check of the established cluster: %+v, %v", r, ok)
	}
	for _, k := range []client.ObjectKey{old, young} {
		if err := f.c.Delete(ctx, &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}); err != nil {
			t.Fatal(err)
		}
		if _, err := acc.Reconcile(ctx, ctrl.Request{NamespacedName: k}); err != nil {
			t.Fatal(err)
		}
		if err := f.c.Get(ctx, k, &v1alpha1.VitalsCluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("cluster %s after deletion: %v, want gone", k, err)
		}
	}
	if _, ok := checks.Get(old, remediation.CheckCloud); ok {
		t.Errorf("the deleted cluster's cloud check is still kept")
	}
	if n := v.Cached(); n != 0 {
		t.Errorf("%d connections cached after every cluster went, want 0", n)
	}
}

func hasEvent(evs []string, prefix string) bool {
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// mustNotLeak fails when the contents of the Secret's keys that are no clouds.yaml appear in the
// status, the Events or the logs.
func (f *tenancyFixture) mustNotLeak(cl *v1alpha1.VitalsCluster, evs []string) {
	f.t.Helper()
	st, _ := json.Marshal(cl.Status)
	for what, text := range map[string]string{"status": string(st), "events": strings.Join(evs, "\n"), "logs": f.logs.String()} {
		if strings.Contains(text, f.marker) {
			f.t.Fatalf("the Secret's contents reached the %s", what)
		}
	}
}

// TestTenancySecretForbidden: when the operator's RBAC does not reach a namespace's Secrets (the chart
// grants get on Secrets only in the namespaces it manages), reading a VitalsCluster's credentials Secret
// there is forbidden by the real kube-apiserver: the refusal is MissingCredentials and says how to grant it,
// not a cloud outage (CloudUnavailable) quoting the API server's RBAC message; its workload kubeconfig
// Secret is MissingKubeconfig, the same way.
func TestTenancySecretForbidden(t *testing.T) {
	parallel(t)
	admin, c, ns := opKube(t)
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		StringData: map[string]string{"clouds.yaml": opCloudsYAML("https://keystone.example:5000/v3", "u", "p", "proj")}}
	if err := c.Create(context.Background(), creds); err != nil {
		t.Fatal(err)
	}
	// The operator as a ServiceAccount granted nothing in this namespace.
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":operator-elsewhere"}
	v := tenancy.NewVerifier(tenancy.Options{
		Secrets: opClient(t, cfg), Clusters: c,
		Connect: func(context.Context, openstack.Auth, http.RoundTripper) (tenancy.Connection, error) {
			t.Fatal("connected without reading the Secret")
			return nil, nil
		},
	})
	cl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c", UID: "c"},
		Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"}, RouterID: "r"},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"}}}
	_, err := v.Resolve(t.Context(), cl)
	var r *tenancy.Refusal
	if !errors.As(err, &r) || r.Reason != tenancy.ReasonMissingCredentials ||
		!strings.Contains(r.Message, "may not read Secrets in namespace "+ns) || !strings.Contains(r.Message, "operator.secrets.namespaces") {
		t.Fatalf("Resolve: %v; want a MissingCredentials refusal saying the operator may not read Secrets in %s and how to grant it", err, ns)
	}
	if strings.Contains(r.Message, "system:serviceaccount") {
		t.Errorf("the refusal quotes the API server's RBAC message: %s", r.Message)
	}
	t.Logf("refusal: %s: %s", r.Reason, r.Message)

	// The workload kubeconfig Secret likewise: MissingKubeconfig, saying how to grant it.
	wm, err := workload.NewManager(workload.Options{Secrets: opClient(t, cfg), Checks: remediation.NewChecks(clock.RealClock{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wm.Close)
	cl.Spec.KubeconfigSecretRef = &v1alpha1.SecretKeyRef{Name: "kubeconfig"}
	_, err = wm.For(t.Context(), cl)
	var we *workload.Error
	if !errors.As(err, &we) || we.Reason != workload.ReasonMissingKubeconfig ||
		!strings.Contains(we.Message, "may not read Secrets in namespace "+ns) || strings.Contains(we.Message, "system:serviceaccount") {
		t.Fatalf("workload access: %v; want MissingKubeconfig saying the operator may not read Secrets in %s", err, ns)
	}
	t.Logf("workload access: %s: %s", we.Reason, we.Message)
}

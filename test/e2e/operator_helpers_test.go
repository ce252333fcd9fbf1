package e2e

// Helpers of the operator scenarios: the VitalsCluster CRD on the real kube-apiserver, and a throw-away
// network, subnet and router on the real Neutron.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/tenancy"
)

// opRepoRoot is the module root, found from this file's path: the one repo-root finder of the package.
func opRepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	opCRDOnce sync.Mutex
	opLogOnce sync.Once
)

// opInstallCRD installs (or updates) the VitalsCluster CRD from deploy/crds and waits until it serves.
func opInstallCRD(t testing.TB, cfg *rest.Config) {
	t.Helper()
	opCRDOnce.Lock()
	defer opCRDOnce.Unlock()
	opLogOnce.Do(func() {
		ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	})
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(opRepoRoot(), "deploy", "crds")}, ErrorIfPathMissing: true,
		MaxTime: time.Minute, PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("install the VitalsCluster CRD: %v", err)
	}
}

func opRandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// opClient is a controller-runtime client with the operator's scheme.
func opClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// opKube is the start of every operator test: the shared kube-apiserver with the VitalsCluster CRD
// installed, a client with the operator's scheme, and a namespace of the test's own.
func opKube(t testing.TB) (*rest.Config, client.Client, string) {
	t.Helper()
	cfg := testenv.Kube(t)
	opInstallCRD(t, cfg)
	c := opClient(t, cfg)
	return cfg, c, opNamespace(t, c)
}

// opPrivateKube is opKube on a kube-apiserver of the test's own (testenv.PrivateKube): for an operator that
// watches every namespace, or a test that writes cluster-scoped objects (Nodes, CRDs) others must not see.
func opPrivateKube(t testing.TB) (*testenv.KubeServer, client.Client) {
	t.Helper()
	k := testenv.PrivateKube(t)
	opInstallCRD(t, k.Config())
	return k, opClient(t, k.Config())
}

// opCloudNet connects to the test cloud with its credentials and makes a network with a router for
// one test.
func opCloudNet(t testing.TB, env testenv.OpenStackEnv) (openstack.Auth, *openstack.Cloud, *opNet) {
	t.Helper()
	auth := opAuth(t, env)
	cloud := opConnect(t, auth, nil)
	return auth, cloud, opNewNet(t, cloud)
}

// opNamespace creates a namespace for one test and deletes it at the end.
func opNamespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := "vitals-op-" + strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + opRandHex(3)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return name
}

// opAuth turns the test cloud's credentials into an openstack.Auth.
func opAuth(t testing.TB, env testenv.OpenStackEnv) openstack.Auth {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env.Env() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	a, err := openstack.AuthFromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("auth from the test cloud's variables: %v", err)
	}
	return a
}

// opConnect connects to the test cloud, optionally through another transport.
func opConnect(t testing.TB, a openstack.Auth, tr http.RoundTripper) *openstack.Cloud {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := openstack.Connect(ctx, openstack.Config{Auth: a, Transport: tr, QPS: -1, HTTPTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatalf("connect to the test cloud: %v", err)
	}
	return c
}

// opFaultProxy puts the fault proxy in front of the test cloud: a proxy for Keystone whose tokens'
// catalog points at one proxy per service, and one for each of services (reached through cloud's
// catalog). It returns the credentials that authenticate through the proxy, and the services' proxies
// in order.
func opFaultProxy(t testing.TB, env testenv.OpenStackEnv, cloud *openstack.Cloud, services ...openstack.Service) (openstack.Auth, []*faultproxy.Proxy) {
	t.Helper()
	fp, err := faultproxy.NewCloud(env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fp.Close() })
	var out []*faultproxy.Proxy
	for _, s := range services {
		c, err := cloud.Client(s)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(c.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		p, err := fp.Service(u.Scheme + "://" + u.Host)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	auth := opAuth(t, env)
	auth.Options.IdentityEndpoint = fp.AuthURL()
	return auth, out
}

// opNet is a throw-away network, subnet and router (with an interface on the subnet) on the real
// Neutron, deleted at the end of the test.
type opNet struct {
	t       testing.TB
	nc      *gophercloud.ServiceClient
	prefix  string // e.g. "10.213.7"
	Network string
	Subnet  string
	Router  string
	ports   []string
}

func opNewNet(t testing.TB, cloud *openstack.Cloud) *opNet {
	t.Helper()
	nc, err := cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, _ := rand.Int(rand.Reader, big.NewInt(250))
	c, _ := rand.Int(rand.Reader, big.NewInt(250))
	n := &opNet{t: t, nc: nc, prefix: fmt.Sprintf("10.%d.%d", 100+b.Int64()%150, c.Int64())}
	name := "vitals-e2e-op-" + opRandHex(4)
	net, err := networks.Create(ctx, nc, networks.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	n.Network = net.ID
	t.Cleanup(n.cleanup)
	gw := n.IP(1)
	sub, err := subnets.Create(ctx, nc, subnets.CreateOpts{NetworkID: net.ID, Name: name, CIDR: n.prefix + ".0/24", IPVersion: gophercloud.IPv4, GatewayIP: &gw}).Extract()
	if err != nil {
		t.Fatalf("create subnet: %v", err)
	}
	n.Subnet = sub.ID
	rt, err := routers.Create(ctx, nc, routers.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("create router: %v", err)
	}
	n.Router = rt.ID
	if _, err := routers.AddInterface(ctx, nc, rt.ID, routers.AddInterfaceOpts{SubnetID: sub.ID}).Extract(); err != nil {
		t.Fatalf("add router interface: %v", err)
	}
	return n
}

// IP is an address of the subnet, e.g. IP(5) = 10.x.y.5.
func (n *opNet) IP(host int) string { return fmt.Sprintf("%s.%d", n.prefix, host) }

// Port creates a port holding IP(host), as a node's port does, in the given security groups (none
// given: the project's default group).
func (n *opNet) Port(host int, groups ...string) string {
	n.t.Helper()
	co := ports.CreateOpts{NetworkID: n.Network, Name: "vitals-e2e-node", FixedIPs: []ports.IP{{SubnetID: n.Subnet, IPAddress: n.IP(host)}}}
	if len(groups) > 0 {
		co.SecurityGroups = &groups
	}
	p, err := ports.Create(context.Background(), n.nc, co).Extract()
	if err != nil {
		n.t.Fatalf("create port %s: %v", n.IP(host), err)
	}
	n.ports = append(n.ports, p.ID)
	return p.ID
}

// Server boots a Nova server (fake driver) on a new port holding IP(host) in groups (see Port), as a
// node is; deleted at the end of the test.
func (n *opNet) Server(cloud *openstack.Cloud, host int, groups ...string) string {
	n.t.Helper()
	return n.ServerOn(cloud, host, "", groups...)
}

// ServerOn is Server on the compute host named ("": where the scheduler puts it), asked as Nova's administrator
// does (availability zone "nova:<host>").
func (n *opNet) ServerOn(cloud *openstack.Cloud, host int, compute string, groups ...string) string {
	n.t.Helper()
	ctx := context.Background()
	cc, err := cloud.Client(openstack.ServiceCompute)
	if err != nil {
		n.t.Fatal(err)
	}
	port := n.Port(host, groups...)
	pages, err := images.List(cc, images.ListOpts{Name: "cirros-fake"}).AllPages(ctx)
	if err != nil {
		n.t.Fatalf("list images: %v", err)
	}
	imgs, err := images.ExtractImages(pages)
	if err != nil || len(imgs) == 0 {
		n.t.Fatalf("no image cirros-fake (%v)", err)
	}
	opts := servers.CreateOpts{Name: "vitals-e2e-node-" + opRandHex(3), FlavorRef: "1", ImageRef: imgs[0].ID,
		Networks: []servers.Network{{Port: port}}}
	if compute != "" {
		opts.AvailabilityZone = "nova:" + compute
	}
	srv, err := servers.Create(ctx, cc, opts, nil).Extract()
	if err != nil {
		n.t.Fatalf("create server: %v", err)
	}
	n.t.Cleanup(func() { _ = servers.Delete(context.Background(), cc, srv.ID).ExtractErr() })
	return srv.ID
}

// DeletePort deletes a port (a node going away).
func (n *opNet) DeletePort(id string) {
	n.t.Helper()
	if err := ports.Delete(context.Background(), n.nc, id).ExtractErr(); err != nil {
		n.t.Fatalf("delete port %s: %v", id, err)
	}
}

// SetRoutes replaces the router's routes.
func (n *opNet) SetRoutes(rs ...openstack.Route) {
	n.t.Helper()
	gr := make([]routers.Route, len(rs))
	for i, r := range rs {
		gr[i] = routers.Route{DestinationCIDR: r.Destination, NextHop: r.NextHop}
	}
	if _, err := routers.Update(context.Background(), n.nc, n.Router, routers.UpdateOpts{Routes: &gr}).Extract(); err != nil {
		n.t.Fatalf("set routes: %v", err)
	}
}

// Routes reads the router's routes.
func (n *opNet) Routes() map[openstack.Route]bool {
	n.t.Helper()
	r, err := routers.Get(context.Background(), n.nc, n.Router).Extract()
	if err != nil {
		n.t.Fatalf("read router: %v", err)
	}
	m := map[openstack.Route]bool{}
	for _, x := range r.Routes {
		m[openstack.Route{Destination: x.DestinationCIDR, NextHop: x.NextHop}] = true
	}
	return m
}

func (n *opNet) cleanup() {
	ctx := context.Background()
	empty := []routers.Route{}
	if n.Router != "" {
		_, _ = routers.Update(ctx, n.nc, n.Router, routers.UpdateOpts{Routes: &empty}).Extract()
		if n.Subnet != "" {
			_, _ = routers.RemoveInterface(ctx, n.nc, n.Router, routers.RemoveInterfaceOpts{SubnetID: n.Subnet}).Extract()
		}
		_ = routers.Delete(ctx, n.nc, n.Router).ExtractErr()
	}
	for _, p := range n.ports {
		_ = ports.Delete(ctx, n.nc, p).ExtractErr()
	}
	if n.Subnet != "" {
		_ = subnets.Delete(ctx, n.nc, n.Subnet).ExtractErr()
	}
	_ = networks.Delete(ctx, n.nc, n.Network).ExtractErr()
}

// opEventually polls cond until it holds or the timeout passes.
func opEventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s (last: %s)", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// staticTenancy gives every Cluster the same cloud and project, and reads the router it names.
type staticTenancy struct {
	cloud   tenancy.Cloud
	project string
}

func (staticTenancy) Forget(types.NamespacedName) {}

func (s staticTenancy) Resolve(ctx context.Context, c *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	router, err := s.cloud.GetRouter(ctx, c.Spec.OpenStack.RouterID)
	if err != nil {
		return nil, err
	}
	return &tenancy.Scope{Cloud: s.cloud, ProjectID: s.project, Source: "test", Router: router}, nil
}

// condition returns the cluster's condition of type typ, or the zero condition.
func condition(cl *v1alpha1.VitalsCluster, typ string) metav1.Condition {
	for _, c := range cl.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// hasAction reports whether one of the controllers' status lines says so.
func hasAction(cl *v1alpha1.VitalsCluster, kind v1alpha1.ActionKind, reason, object string) bool {
	for _, name := range []string{v1alpha1.ControllerRouteGC, v1alpha1.ControllerFlight, v1alpha1.ControllerDeorbit} {
		b := cl.Status.Controller(name, false)
		if b == nil {
			continue
		}
		for _, a := range b.Actions {
			if a.Action == kind && a.Reason == reason && (object == "" || a.Object == object) {
				return true
			}
		}
	}
	return false
}

// drainEvents empties the recorder and reports whether an Event of reason came, naming each of texts.
func drainEvents(r *events.FakeRecorder, reason string, texts ...string) bool {
	found := false
	for {
		select {
		case e := <-r.Events:
			if strings.Contains(e, " "+reason+" ") && !slices.ContainsFunc(texts, func(s string) bool { return !strings.Contains(e, s) }) {
				found = true
			}
		default:
			return found
		}
	}
}

// lockedBuffer collects the output of several goroutines (a process's writer, a logger) for the test to read:
// the one log buffer of the package.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// simTenant starts an OpenStack simulator of the test's own (seed), seeds a cluster of that name with nodes
// servers in a project of the same name, and connects to it as a member of that project (a tenant's rights).
func simTenant(t *testing.T, seed uint64, name string, nodes int) (*cloudsim.Sim, *cloudsim.SeededCluster, *openstack.Cloud) {
	t.Helper()
	return simTenantOn(t, seed, cloudsim.ClusterSeed{Project: name, Name: name, Nodes: nodes})
}

// simTenantOn is simTenant of cs (its nodes spread over cs.Hosts compute hosts).
func simTenantOn(t *testing.T, seed uint64, cs cloudsim.ClusterSeed) (*cloudsim.Sim, *cloudsim.SeededCluster, *openstack.Cloud) {
	name := cs.Name
	t.Helper()
	sim, err := cloudsim.New(cloudsim.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim.Handler())
	t.Cleanup(ts.Close)
	seeded, err := sim.SeedCluster(cs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.CreateUser("tenant", "tenant-password", false, seeded.ProjectID); err != nil {
		t.Fatal(err)
	}
	auth := openstack.Auth{}
	auth.Options.IdentityEndpoint, auth.Options.Username, auth.Options.Password = ts.URL+"/v3", "tenant", "tenant-password"
	auth.Options.DomainName, auth.Options.TenantName = "Default", name
	conn, err := openstack.Connect(context.Background(), openstack.Config{Auth: auth, QPS: -1, HTTPTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return sim, seeded, conn
}

package testenv_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestKube(t *testing.T) {
	cfg := testenv.Kube(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	t.Logf("kube-apiserver %s", v.GitVersion)
	if _, err := cs.CoreV1().Namespaces().Get(ctxFor(t), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace default: %v", err)
	}
	// The kubeconfig file works for tools that take a path.
	if _, err := clientcmd.BuildConfigFromFlags("", testenv.KubeconfigPath(t)); err != nil {
		t.Fatal(err)
	}
}

func TestOpenStack(t *testing.T) {
	e := testenv.OpenStack(t)
	ctx := ctxFor(t)
	pc, err := openstack.AuthenticatedClient(ctx, e.AuthOptions())
	if err != nil {
		t.Fatalf("authenticate at %s: %v", e.AuthURL, err)
	}
	nc, err := openstack.NewNetworkV2(pc, e.EndpointOpts())
	if err != nil {
		t.Fatalf("network client: %v", err)
	}
	if _, err := networks.List(nc, nil).AllPages(ctx); err != nil {
		t.Fatalf("list networks: %v", err)
	}
	// The route controllers rely on these Neutron extensions.
	for _, alias := range []string{"router", "extraroute", "extraroute-atomic"} {
		if _, err := extensions.Get(ctx, nc, alias).Extract(); err != nil {
			t.Errorf("neutron extension %s: %v", alias, err)
		}
	}
	// Env() is what gophercloud's AuthOptionsFromEnv (and the openstack CLI) read.
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	fromEnv, err := openstack.AuthOptionsFromEnv()
	if err != nil {
		t.Fatalf("AuthOptionsFromEnv with Env(): %v", err)
	}
	if _, err := openstack.AuthenticatedClient(ctx, fromEnv); err != nil {
		t.Fatalf("authenticate with the options from Env(): %v", err)
	}
	env := strings.Join(e.Env(), "\n")
	for _, want := range []string{"OS_AUTH_URL=" + e.AuthURL, "OS_DOMAIN_NAME=", "OS_REGION_NAME="} {
		if !strings.Contains(env, want) {
			t.Errorf("Env() lacks %q:\n%s", want, env)
		}
	}
}

func TestOpenStackFull(t *testing.T) {
	e := testenv.RequireFull(t)
	ctx := ctxFor(t)
	pc, err := openstack.AuthenticatedClient(ctx, e.AuthOptions())
	if err != nil {
		t.Fatal(err)
	}
	for name, mk := range map[string]func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error){
		"compute": openstack.NewComputeV2, "block-storage": openstack.NewBlockStorageV3, "load-balancer": openstack.NewLoadBalancerV2,
	} {
		if _, err := mk(pc, e.EndpointOpts()); err != nil {
			t.Errorf("%s client (catalog): %v", name, err)
		}
	}
	cc, err := openstack.NewComputeV2(pc, e.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	pages, err := flavors.ListDetail(cc, nil).AllPages(ctx)
	if err != nil {
		t.Fatalf("list flavors: %v", err)
	}
	fl, err := flavors.ExtractFlavors(pages)
	if err != nil || len(fl) == 0 {
		t.Fatalf("flavors: %v, %v (hack/openstack.sh creates m1.tiny)", fl, err)
	}
}

func TestDocker(t *testing.T) {
	host := testenv.Docker(t)
	sock := strings.TrimPrefix(host, "unix://")
	c := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	req, _ := http.NewRequestWithContext(ctxFor(t), http.MethodGet, "http://docker/_ping", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("ping dockerd at %s: %v", host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "OK" {
		t.Fatalf("ping dockerd: %s %q", resp.Status, b)
	}
}

func TestPrivateKeystoneStopStart(t *testing.T) {
	t0 := time.Now()
	ks := testenv.PrivateKeystone(t)
	t.Logf("private keystone up in %s", time.Since(t0))
	ctx := ctxFor(t)
	opts := ks.OpenStack().AuthOptions()
	if !strings.HasPrefix(opts.IdentityEndpoint, ks.URL()) {
		t.Fatalf("AuthOptions point at %s, want %s", opts.IdentityEndpoint, ks.URL())
	}
	if _, err := openstack.AuthenticatedClient(ctx, opts); err != nil {
		t.Fatalf("authenticate at private keystone: %v", err)
	}
	// Restart it several times: each restart must come back and issue tokens again (a threaded uWSGI once hung
	// here on a fresh machine).
	for i := range 3 {
		t0 = time.Now()
		if err := ks.Stop(); err != nil {
			t.Fatal(err)
		}
		t.Logf("restart %d: stopped in %s", i+1, time.Since(t0))
		_, err := openstack.AuthenticatedClient(ctx, opts)
		var opErr *net.OpError
		if err == nil || !errors.As(err, &opErr) {
			t.Fatalf("restart %d: authenticate at stopped keystone: got %v, want a connection error", i+1, err)
		}
		t0 = time.Now()
		if err := ks.Start(); err != nil {
			t.Fatal(err)
		}
		t.Logf("restart %d: up again in %s", i+1, time.Since(t0))
		if _, err := openstack.AuthenticatedClient(ctx, opts); err != nil {
			t.Fatalf("restart %d: authenticate after restart: %v", i+1, err)
		}
	}
}

func TestPrivateKubeKeepsDataAcrossRestart(t *testing.T) {
	t0 := time.Now()
	k := testenv.PrivateKube(t)
	t.Logf("private kube-apiserver ready in %s", time.Since(t0))
	ctx := ctxFor(t)
	cs, err := kubernetes.NewForConfig(k.Config())
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	t0 = time.Now()
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(t0))
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{}); err == nil || apierrors.IsNotFound(err) {
		t.Fatalf("get from a stopped apiserver: got %v, want a connection error", err)
	}
	t0 = time.Now()
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %s", time.Since(t0))
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after restart with the client made before it: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Fatalf("configmap data after restart: %v", got.Data)
	}
	if _, err := clientcmd.BuildConfigFromFlags("", k.KubeconfigPath()); err != nil {
		t.Fatal(err)
	}
}

// TestNode reads the node cluster's description and enters a node: read-only, since test/node stops kubelets
// while other packages run.
func TestNode(t *testing.T) {
	c := testenv.Node(t)
	cs := c.Client(t)
	if len(c.Nodes) == 0 {
		t.Fatal("no node names")
	}
	for _, n := range c.Nodes {
		node, err := cs.CoreV1().Nodes().Get(ctxFor(t), n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get Node %s: %v", n, err)
		}
		var ip string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		if out := c.Exec(t, n, "ip", "-4", "-o", "addr", "show", "dev", "eth0"); ip == "" || !strings.Contains(out, ip+"/") {
			t.Errorf("%s: InternalIP %q; eth0 in its namespace: %s", n, ip, out)
		}
	}
}

package faultproxy_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

const neutronOrigin = "http://127.0.0.1:9696"

type cloudFixture struct {
	cloud   *faultproxy.Cloud
	neutron *faultproxy.Proxy
	nc      *gophercloud.ServiceClient
	pc      *gophercloud.ProviderClient
	env     testenv.OpenStackEnv
}

// newCloud routes a gophercloud client's whole traffic (Keystone and Neutron) through proxies.
func newCloud(t *testing.T) cloudFixture {
	t.Helper()
	env := testenv.OpenStack(t)
	cloud, err := faultproxy.NewCloud(env.AuthURL, faultproxy.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.Close() })
	neutron, err := cloud.Service(neutronOrigin)
	if err != nil {
		t.Fatal(err)
	}
	opts := env.AuthOptions()
	opts.IdentityEndpoint = cloud.AuthURL()
	pc, err := openstack.AuthenticatedClient(ctx(t), opts)
	if err != nil {
		t.Fatalf("authenticate through the proxy: %v", err)
	}
	nc, err := openstack.NewNetworkV2(pc, env.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(nc.Endpoint, neutron.URL()) {
		t.Fatalf("network endpoint %s: the catalog was not rewritten to the proxy %s", nc.Endpoint, neutron.URL())
	}
	return cloudFixture{cloud: cloud, neutron: neutron, nc: nc, pc: pc, env: env}
}

// testWriter sends the proxies' logs to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// makeNetworks creates n networks named name directly (not through the proxy) and deletes them at the end.
func makeNetworks(t *testing.T, env testenv.OpenStackEnv, name string, n int) []string {
	t.Helper()
	pc, err := openstack.AuthenticatedClient(ctx(t), env.AuthOptions())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := openstack.NewNetworkV2(pc, env.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range n {
		nw, err := networks.Create(ctx(t), nc, networks.CreateOpts{Name: name}).Extract()
		if err != nil {
			t.Fatalf("create network: %v", err)
		}
		ids = append(ids, nw.ID)
		t.Cleanup(func() { _ = networks.Delete(context.Background(), nc, nw.ID).ExtractErr() })
	}
	return ids
}

func listIDs(c context.Context, nc *gophercloud.ServiceClient, opts networks.ListOpts) ([]string, error) {
	pages, err := networks.List(nc, opts).AllPages(c)
	if err != nil {
		return nil, err
	}
	nws, err := networks.ExtractNetworks(pages)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(nws))
	for i, n := range nws {
		ids[i] = n.ID
	}
	return ids, nil
}

func wantStatus(t *testing.T, err error, code int, bodyPart string) {
	t.Helper()
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		t.Fatalf("got %v (%T), want HTTP %d", err, err, code)
	}
	if ue.Actual != code || !strings.Contains(string(ue.Body), bodyPart) {
		t.Fatalf("got HTTP %d %s, want %d with %q", ue.Actual, ue.Body, code, bodyPart)
	}
}

func isConnError(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func TestNeutronStatus(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	if err := f.neutron.Add(faultproxy.Rule{Name: "create-conflict", Method: "POST", Path: "/v2.0/networks",
		Fault: faultproxy.Status(409, faultproxy.StyleNeutron, "injected conflict")}); err != nil {
		t.Fatal(err)
	}
	_, err := networks.Create(ctx(t), f.nc, networks.CreateOpts{Name: uniqueName("fp-status")}).Extract()
	wantStatus(t, err, 409, `"NeutronError"`)
	if !strings.Contains(err.Error(), "injected conflict") {
		t.Errorf("gophercloud's error does not carry Neutron's message: %v", err)
	}
	if got := f.neutron.Count("create-conflict"); got != 1 {
		t.Fatalf("Count = %d, want 1", got)
	}
	ev := f.neutron.Events()
	if len(ev) != 1 || ev[0].Kind != faultproxy.KindStatus || ev[0].Method != "POST" || ev[0].Path != "/v2.0/networks" {
		t.Fatalf("events = %+v", ev)
	}
	// Other requests pass.
	if _, err := listIDs(ctx(t), f.nc, networks.ListOpts{Name: "none"}); err != nil {
		t.Fatalf("list through the proxy: %v", err)
	}
}

func TestNeutronDelay(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	if err := f.neutron.Add(faultproxy.Rule{Name: "slow", Method: "GET", Path: "/v2.0/networks", Fault: faultproxy.Delay(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx(t), 200*time.Millisecond)
	defer cancel()
	if _, err := listIDs(short, f.nc, networks.ListOpts{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("list with a 200ms deadline behind a 5s delay: got %v, want deadline exceeded", err)
	}
	f.neutron.Clear()
	if err := f.neutron.Add(faultproxy.Rule{Name: "a-bit-slow", Method: "GET", Path: "/v2.0/networks", Fault: faultproxy.Delay(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if _, err := listIDs(ctx(t), f.nc, networks.ListOpts{}); err != nil {
		t.Fatalf("list behind a 50ms delay: %v", err)
	}
	if f.neutron.Count("slow") != 1 || f.neutron.Count("a-bit-slow") != 1 {
		t.Fatalf("counts slow=%d a-bit-slow=%d, want 1 and 1", f.neutron.Count("slow"), f.neutron.Count("a-bit-slow"))
	}
}

func TestNeutronReset(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	if err := f.neutron.Add(faultproxy.Rule{Name: "rst", Method: "GET", Path: "/v2.0/networks", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	_, err := listIDs(ctx(t), f.nc, networks.ListOpts{})
	if !isConnError(err) {
		t.Fatalf("list through a reset: got %v, want a connection reset", err)
	}
	if f.neutron.Count("rst") < 1 {
		t.Fatal("reset not counted")
	}
}

func TestNeutronResetAfterUpstream(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	name := uniqueName("fp-rst-after")
	if err := f.neutron.Add(faultproxy.Rule{Name: "rst-after", Method: "POST", Path: "/v2.0/networks", Fault: faultproxy.ResetAfterUpstream()}); err != nil {
		t.Fatal(err)
	}
	_, err := networks.Create(ctx(t), f.nc, networks.CreateOpts{Name: name}).Extract()
	if !isConnError(err) {
		t.Fatalf("create through a reset: got %v, want a connection error", err)
	}
	// The client saw an error, yet Neutron created the network.
	f.neutron.Clear()
	ids, err := listIDs(ctx(t), f.nc, networks.ListOpts{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		_ = networks.Delete(context.Background(), f.nc, id).ExtractErr()
	}
	if len(ids) == 0 {
		t.Fatal("the network was not created upstream")
	}
}

func TestNeutronTimeout(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	if err := f.neutron.Add(faultproxy.Rule{Name: "hang", Method: "GET", Path: "/v2.0/networks", Fault: faultproxy.Timeout(0)}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	if _, err := listIDs(short, f.nc, networks.ListOpts{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("list against a hanging proxy: got %v, want deadline exceeded", err)
	}
	f.neutron.Clear()
	if err := f.neutron.Add(faultproxy.Rule{Name: "hang-then-close", Method: "GET", Path: "/v2.0/networks", Fault: faultproxy.Timeout(100 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if _, err := listIDs(ctx(t), f.nc, networks.ListOpts{}); !isConnError(err) {
		t.Fatalf("list against a proxy that hangs up: got %v, want EOF", err)
	}
}

func TestNeutronTruncate(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	name := uniqueName("fp-trunc")
	makeNetworks(t, f.env, name, 2)
	if err := f.neutron.Add(faultproxy.Rule{Name: "cut", Method: "GET", Path: "/v2.0/networks", Fault: faultproxy.Truncate(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := listIDs(ctx(t), f.nc, networks.ListOpts{Name: name}); err == nil {
		t.Fatal("list with a truncated body: want an error")
	} else {
		t.Logf("truncated body: %v", err)
	}
	if f.neutron.Count("cut") < 1 {
		t.Fatal("truncation not counted")
	}
}

func TestNeutronReorderAndPaging(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	name := uniqueName("fp-order")
	makeNetworks(t, f.env, name, 3)
	opts := networks.ListOpts{Name: name, SortKey: "id", SortDir: "asc"}
	plain, err := listIDs(ctx(t), f.nc, opts)
	if err != nil || len(plain) != 3 {
		t.Fatalf("list: %v, %v", plain, err)
	}
	if err := f.neutron.Add(faultproxy.Rule{Name: "reverse", Method: "GET", Path: "/v2.0/networks", Fault: faultproxy.Reorder()}); err != nil {
		t.Fatal(err)
	}
	got, err := listIDs(ctx(t), f.nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{plain[2], plain[1], plain[0]}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("reordered page %v, want %v", got, want)
	}
	if !f.neutron.Remove("reverse") || f.neutron.Remove("reverse") {
		t.Fatal("Remove must report whether the rule existed")
	}

	// Page size 1: the next-page links lead back through the proxy, and a rule on marker= fails page 2.
	opts.Limit = 1
	if err := f.neutron.Add(faultproxy.Rule{Name: "page2", Method: "GET", Path: "/v2.0/networks",
		Query: map[string]string{"marker": ""}, Fault: faultproxy.Status(500, faultproxy.StyleNeutron, "page 2 failed")}); err != nil {
		t.Fatal(err)
	}
	before := f.neutron.Requests()
	_, err = listIDs(ctx(t), f.nc, opts)
	wantStatus(t, err, 500, "page 2 failed")
	if f.neutron.Count("page2") != 1 || f.neutron.Requests()-before != 2 {
		t.Fatalf("page2 count %d, requests %d: want 1 fault after 2 requests", f.neutron.Count("page2"), f.neutron.Requests()-before)
	}
	if ev := f.neutron.Events(); !strings.Contains(ev[len(ev)-1].Query, "marker=") {
		t.Fatalf("last event %+v: want the marker query", ev[len(ev)-1])
	}
	f.neutron.Clear()
	all, err := listIDs(ctx(t), f.nc, opts)
	if err != nil || strings.Join(all, ",") != strings.Join(plain, ",") {
		t.Fatalf("paged list after Clear: %v, %v; want %v", all, err, plain)
	}
}

func TestNeutronSequenceFailTwiceThenPass(t *testing.T) {
	t.Parallel()
	f := newCloud(t)
	if err := f.neutron.Add(faultproxy.FailTimes("flaky", "GET", "/v2.0/networks", 2, faultproxy.Status(503, faultproxy.StyleNeutron, "try again"))); err != nil {
		t.Fatal(err)
	}
	var results []string
	for range 3 {
		_, err := listIDs(ctx(t), f.nc, networks.ListOpts{Name: "none"})
		if err != nil {
			wantStatus(t, err, 503, "try again")
			results = append(results, "fail")
		} else {
			results = append(results, "ok")
		}
	}
	if strings.Join(results, ",") != "fail,fail,ok" {
		t.Fatalf("results %v, want fail,fail,ok", results)
	}
	if f.neutron.Count("flaky") != 2 || f.neutron.Matched("flaky") != 3 {
		t.Fatalf("count %d matched %d, want 2 and 3", f.neutron.Count("flaky"), f.neutron.Matched("flaky"))
	}
	if err := f.neutron.Add(faultproxy.Rule{Name: "flaky", Fault: faultproxy.Reset()}); err == nil {
		t.Fatal("a duplicate rule name must be refused")
	}
}

func TestKeystoneFaults(t *testing.T) {
	t.Parallel()
	env := testenv.OpenStack(t)
	cloud, err := faultproxy.NewCloud(env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Close()
	ks := cloud.Keystone()
	if err := ks.Add(faultproxy.FailTimes("auth-down", "POST", "/v3/auth/tokens", 1, faultproxy.Status(503, faultproxy.StyleKeystone, "keystone unavailable"))); err != nil {
		t.Fatal(err)
	}
	opts := env.AuthOptions()
	opts.IdentityEndpoint = cloud.AuthURL()
	_, err = openstack.AuthenticatedClient(ctx(t), opts)
	wantStatus(t, err, 503, `"title":"Service Unavailable"`)
	if _, err := openstack.AuthenticatedClient(ctx(t), opts); err != nil {
		t.Fatalf("second authentication (the sequence passes): %v", err)
	}
	if ks.Count("auth-down") != 1 {
		t.Fatalf("count %d, want 1", ks.Count("auth-down"))
	}
}

func TestNovaStatus(t *testing.T) {
	t.Parallel()
	env := testenv.RequireFull(t)
	cloud, err := faultproxy.NewCloud(env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Close()
	nova, err := cloud.Service("http://127.0.0.1:8774")
	if err != nil {
		t.Fatal(err)
	}
	if err := nova.Add(faultproxy.Rule{Name: "nova-500", Method: "GET", Path: "/v2.1/flavors/detail", Fault: faultproxy.Status(500, faultproxy.StyleNova, "nova exploded")}); err != nil {
		t.Fatal(err)
	}
	opts := env.AuthOptions()
	opts.IdentityEndpoint = cloud.AuthURL()
	pc, err := openstack.AuthenticatedClient(ctx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := openstack.NewComputeV2(pc, env.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	_, err = flavors.ListDetail(cc, nil).AllPages(ctx(t))
	wantStatus(t, err, 500, `"computeFault"`)
	nova.Clear()
	if _, err := flavors.ListDetail(cc, nil).AllPages(ctx(t)); err != nil {
		t.Fatalf("list flavors after Clear: %v", err)
	}
}

func TestCinderAndOctavia(t *testing.T) {
	t.Parallel()
	env := testenv.RequireFull(t)
	cloud, err := faultproxy.NewCloud(env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Close()
	cinder, err := cloud.Service("http://127.0.0.1:8776")
	if err != nil {
		t.Fatal(err)
	}
	octavia, err := cloud.Service("http://127.0.0.1:9876")
	if err != nil {
		t.Fatal(err)
	}
	if err := cinder.Add(faultproxy.FailTimes("cinder-busy", "GET", "/v3/*/volumes/detail", 1, faultproxy.Status(503, faultproxy.StyleNova, "cinder busy"))); err != nil {
		t.Fatal(err)
	}
	if err := octavia.Add(faultproxy.FailTimes("octavia-409", "GET", "/v2.0/lbaas/loadbalancers", 1, faultproxy.Status(409, faultproxy.StyleOctavia, "immutable"))); err != nil {
		t.Fatal(err)
	}
	opts := env.AuthOptions()
	opts.IdentityEndpoint = cloud.AuthURL()
	pc, err := openstack.AuthenticatedClient(ctx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := openstack.NewBlockStorageV3(pc, env.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	lb, err := openstack.NewLoadBalancerV2(pc, env.EndpointOpts())
	if err != nil {
		t.Fatal(err)
	}
	_, err = volumes.List(bs, nil).AllPages(ctx(t))
	wantStatus(t, err, 503, `"serviceUnavailable"`)
	if _, err := volumes.List(bs, nil).AllPages(ctx(t)); err != nil {
		t.Fatalf("second volume list (the sequence passes): %v", err)
	}
	_, err = loadbalancers.List(lb, nil).AllPages(ctx(t))
	wantStatus(t, err, 409, `"faultstring"`)
	if _, err := loadbalancers.List(lb, nil).AllPages(ctx(t)); err != nil {
		t.Fatalf("second load balancer list: %v", err)
	}
	if cinder.Count("cinder-busy") != 1 || octavia.Count("octavia-409") != 1 {
		t.Fatalf("counts cinder=%d octavia=%d, want 1 and 1", cinder.Count("cinder-busy"), octavia.Count("octavia-409"))
	}
}

// The proxy gives a clear 502 when its upstream is down (a port nothing listens on).
func TestUpstreamDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := faultproxy.New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := &gophercloud.ServiceClient{ProviderClient: &gophercloud.ProviderClient{}, Endpoint: p.URL() + "/"}
	_, err = c.Get(ctx(t), c.ServiceURL("v2.0", "networks"), nil, nil)
	wantStatus(t, err, 502, "upstream")
}

package openstack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/vitalsproject/vitals/health"
	checks "github.com/vitalsproject/vitals/health/checks/openstack"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	vos "github.com/vitalsproject/vitals/openstack"
)

func authOf(e testenv.OpenStackEnv) vos.Auth {
	return vos.Auth{Options: e.AuthOptions(), Region: e.RegionName, Source: "testenv"}
}

func connect(t *testing.T, a vos.Auth) *vos.Cloud {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := vos.Connect(ctx, vos.Config{Auth: a, HTTPTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func run(t *testing.T, f func(context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return f(ctx)
}

func TestKeystoneAndNeutronChecks(t *testing.T) {
	t.Parallel()
	c := connect(t, authOf(testenv.OpenStack(t)))
	for name, f := range map[string]func(context.Context) error{
		"keystone": testenv.MustCheck(t)(checks.Keystone(checks.Options{Cloud: c})),
		"neutron":  testenv.MustCheck(t)(checks.Neutron(checks.Options{Cloud: c})),
	} {
		if err := run(t, f); err != nil {
			t.Errorf("%s check: %v", name, err)
		}
	}
}

// TestKeystoneStopped stops a private Keystone. Run directly, the Keystone check fails at its first
// run after the stop and passes at its first run after the restart; run by a health.Manager, its
// result turns failed after the stop and OK after the restart (the latencies are logged).
func TestKeystoneStopped(t *testing.T) {
	t.Parallel()
	k := testenv.PrivateKeystone(t)
	c := connect(t, authOf(k.OpenStack()))
	const interval = 200 * time.Millisecond
	direct := testenv.MustCheck(t)(checks.Keystone(checks.Options{Cloud: c, MinInterval: interval}))

	m := health.NewManager()
	m.MustRegister(health.Check{Name: "keystone", Run: testenv.MustCheck(t)(checks.Keystone(checks.Options{Cloud: c, MinInterval: time.Second})),
		Interval: 2 * time.Second, Timeout: 2 * time.Second})
	m.Start(t.Context())
	t.Cleanup(m.Stop)
	waitStatus := func(want health.Status) time.Time {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if r, _ := m.Result("keystone"); r.Status == want {
				return time.Now()
			}
			time.Sleep(20 * time.Millisecond)
		}
		r, _ := m.Result("keystone")
		t.Fatalf("manager: keystone check still %s (%v) after a minute, want %s", r.Status, r.Err, want)
		return time.Time{}
	}

	if err := run(t, direct); err != nil {
		t.Fatalf("keystone up: %v", err)
	}
	waitStatus(health.StatusOK)

	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	time.Sleep(interval)
	err := run(t, direct)
	if err == nil || !strings.Contains(err.Error(), "keystone at "+k.URL()) {
		t.Fatalf("first run after the stop: %v; want a failure naming %s", err, k.URL())
	}
	t.Logf("keystone down: %v", err)
	// Neutron keeps working: it validates tokens with the shared Keystone.
	if err := run(t, testenv.MustCheck(t)(checks.Neutron(checks.Options{Cloud: c}))); err != nil {
		t.Errorf("neutron check with the private keystone down: %v", err)
	}
	t.Logf("manager saw keystone fail %s after the stop (check interval 2s)", waitStatus(health.StatusFailed).Sub(stopped).Round(time.Millisecond))

	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	time.Sleep(interval)
	if err := run(t, direct); err != nil {
		t.Fatalf("first run after the restart: %v", err)
	}
	t.Logf("manager saw keystone recover %s after the restart", waitStatus(health.StatusOK).Sub(started).Round(time.Millisecond))
}

func TestQuotaHeadroom(t *testing.T) {
	t.Parallel()
	c := connect(t, authOf(testenv.OpenStack(t)))
	ctx := t.Context()
	nc, err := c.Client(vos.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	sfx := time.Now().UnixNano()
	n, err := networks.Create(ctx, nc, networks.CreateOpts{Name: fmt.Sprintf("vitals-quota-%d", sfx)}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), nc, n.ID).ExtractErr() })
	sn, err := subnets.Create(ctx, nc, subnets.CreateOpts{NetworkID: n.ID, CIDR: "10.81.0.0/24", IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = subnets.Delete(context.Background(), nc, sn.ID).ExtractErr() })
	rname := fmt.Sprintf("vitals-quota-%d", sfx)
	r, err := routers.Create(ctx, nc, routers.CreateOpts{Name: rname}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = routers.Delete(context.Background(), nc, r.ID).ExtractErr() })
	if _, err := routers.AddInterface(ctx, nc, r.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = routers.Update(context.Background(), nc, r.ID, routers.UpdateOpts{Routes: &[]routers.Route{}}).Extract()
		_, _ = routers.RemoveInterface(context.Background(), nc, r.ID, routers.RemoveInterfaceOpts{SubnetID: sn.ID}).Extract()
	})
	var routes []vos.Route
	for i := 0; i < 3; i++ {
		routes = append(routes, vos.Route{Destination: fmt.Sprintf("10.244.%d.0/24", i), NextHop: fmt.Sprintf("10.81.0.%d", 10+i)})
	}
	if _, err := c.AddRoutes(ctx, r.ID, routes); err != nil {
		t.Fatal(err)
	}
	mine := vos.ListOpts{Name: rname}

	tests := []struct {
		name    string
		opts    checks.QuotaOptions
		wantErr string
	}{
		{name: "headroom", opts: checks.QuotaOptions{Threshold: 1, Routers: mine}},
		{name: "routes near max_routes", opts: checks.QuotaOptions{Threshold: 0.8, MaxRoutes: 3, Routers: mine},
			wantErr: fmt.Sprintf("routes of router %s (%s) 3/3 (100%% > 80%%)", r.ID, rname)},
		{name: "networks over a tiny threshold", opts: checks.QuotaOptions{Threshold: 1e-9, Routers: mine}, wantErr: "networks "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Options.Cloud = c
			err := run(t, testenv.MustCheck(t)(checks.QuotaHeadroom(tc.opts)))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want it to contain %q", err, tc.wantErr)
			}
			t.Log(err)
		})
	}
}

// TestConstructorsRefuse: without a cloud, or with options out of range, the constructors refuse.
func TestConstructorsRefuse(t *testing.T) {
	for name, err := range map[string]error{
		"keystone":        second(checks.Keystone(checks.Options{})),
		"neutron":         second(checks.Neutron(checks.Options{})),
		"quota no cloud":  second(checks.QuotaHeadroom(checks.QuotaOptions{})),
		"quota threshold": second(checks.QuotaHeadroom(checks.QuotaOptions{Options: checks.Options{Cloud: &vos.Cloud{}}, Threshold: 1.5})),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func second(_ func(context.Context) error, err error) error { return err }

package cloudsim_test

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	lbquotas "github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/quotas"
)

// Cinder's quota set counts the project's volumes and their gigabytes; Octavia's limits are
// unlimited; a member reads its own project's only.
func TestCinderAndOctaviaQuotas(t *testing.T) {
	e := newEnv(t)
	c := e.member(t)
	ctx := t.Context()
	if _, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 3, Name: "v"}, nil).Extract(); err != nil {
		t.Fatal(err)
	}
	u, err := quotasets.GetUsage(ctx, c.volume, e.p1).Extract()
	if err != nil || u.Volumes.InUse != 1 || u.Volumes.Limit != 10 || u.Gigabytes.InUse != 3 || u.Snapshots.InUse != 0 {
		t.Fatalf("cinder quota usage = %+v, %v", u, err)
	}
	if q, err := quotasets.Get(ctx, c.volume, e.p1).Extract(); err != nil || q.Volumes != 10 || q.Gigabytes != 1000 {
		t.Fatalf("cinder quota = %+v, %v", q, err)
	}
	_, err = quotasets.GetUsage(ctx, c.volume, e.admin).Extract()
	wantCode(t, "member reads another project's cinder quota", err, 403)

	q, err := lbquotas.Get(ctx, c.lb, e.p1).Extract()
	if err != nil || q.Loadbalancer != -1 || q.Listener != -1 {
		t.Fatalf("octavia quota = %+v, %v", q, err)
	}
	_, err = lbquotas.Get(ctx, c.lb, e.admin).Extract()
	wantCode(t, "member reads another project's octavia quota", err, 403)
	if _, err := lbquotas.Get(ctx, e.adminClients(t).lb, e.p1).Extract(); err != nil {
		t.Fatalf("admin reads a project's octavia quota: %v", err)
	}
}

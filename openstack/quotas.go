package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/quotasets"
	lbquotas "github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/quotas"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/quotas"
)

var _ Quotas = (*Cloud)(nil)

// Quotas reads project's quotas in service with their use, in one request per service: Neutron's
// quota details (used, reserved and limit of every resource), Cinder's quota set with usage (volumes,
// snapshots, gigabytes, backups, backup_gigabytes, groups), and Octavia's quota of load balancers,
// whose use is the project's load balancers listed (Octavia reports limits only).
func (c *Cloud) Quotas(ctx context.Context, service Service, projectID string) ([]Quota, error) {
	if projectID == "" {
		return nil, fmt.Errorf("read %s quotas: no project", service)
	}
	sc, err := c.Client(service)
	if err != nil {
		return nil, fmt.Errorf("read %s quotas of project %s: %w", service, projectID, Classify(err))
	}
	switch service {
	case ServiceNetworking:
		q, err := quotas.GetDetail(ctx, sc, projectID).Extract()
		if err != nil {
			return nil, fmt.Errorf("read network quotas of project %s: %w", projectID, Classify(err))
		}
		out := make([]Quota, 0, 10)
		for _, r := range []struct {
			name string
			d    quotas.QuotaDetail
		}{
			{"port", q.Port}, {"floatingip", q.FloatingIP}, {"security_group", q.SecurityGroup},
			{"security_group_rule", q.SecurityGroupRule}, {"network", q.Network}, {"subnet", q.Subnet},
			{"router", q.Router}, {"subnetpool", q.SubnetPool}, {"rbac_policy", q.RBACPolicy}, {"trunk", q.Trunk},
		} {
			out = append(out, Quota{Resource: r.name, Used: r.d.Used, Reserved: r.d.Reserved, Limit: r.d.Limit})
		}
		return out, nil
	case ServiceBlockStorage:
		q, err := quotasets.GetUsage(ctx, sc, projectID).Extract()
		if err != nil {
			return nil, fmt.Errorf("read block-storage quotas of project %s: %w", projectID, Classify(err))
		}
		out := make([]Quota, 0, 6)
		for _, r := range []struct {
			name string
			u    quotasets.QuotaUsage
		}{
			{"volumes", q.Volumes}, {"snapshots", q.Snapshots}, {"gigabytes", q.Gigabytes},
			{"backups", q.Backups}, {"backup_gigabytes", q.BackupGigabytes}, {"groups", q.Groups},
		} {
			out = append(out, Quota{Resource: r.name, Used: r.u.InUse + r.u.Allocated, Reserved: r.u.Reserved, Limit: r.u.Limit})
		}
		return out, nil
	case ServiceLoadBalancer:
		q, err := lbquotas.Get(ctx, sc, projectID).Extract()
		if err != nil {
			return nil, fmt.Errorf("read load-balancer quotas of project %s: %w", projectID, Classify(err))
		}
		lbs, err := c.ListLoadBalancers(ctx, ListOpts{ProjectID: projectID})
		if err != nil {
			return nil, fmt.Errorf("read load-balancer quotas of project %s: %w", projectID, Classify(err))
		}
		return []Quota{{Resource: "load_balancer", Used: len(lbs), Limit: q.Loadbalancer}}, nil
	}
	return nil, fmt.Errorf("read %s quotas of project %s: not a service with quotas Vitals reads", service, projectID)
}

package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
)

func loadBalancerFrom(lb *loadbalancers.LoadBalancer) LoadBalancer {
	return LoadBalancer{ID: lb.ID, Name: lb.Name, ProjectID: lb.ProjectID, ProvisioningStatus: lb.ProvisioningStatus,
		OperatingStatus: lb.OperatingStatus, VIPAddress: lb.VipAddress, VIPPortID: lb.VipPortID, VIPSubnetID: lb.VipSubnetID, Tags: lb.Tags}
}

// ListLoadBalancers lists every load balancer matching opts (Name, ProjectID, Tags: all of them),
// all pages.
func (c *Cloud) ListLoadBalancers(ctx context.Context, opts ListOpts) ([]LoadBalancer, error) {
	lc, err := c.Client(ServiceLoadBalancer)
	if err != nil {
		return nil, fmt.Errorf("list load balancers: %w", Classify(err))
	}
	if err := opts.only("load balancers", "Name", "ProjectID", "Tags"); err != nil {
		return nil, err
	}
	lo := loadbalancers.ListOpts{Name: opts.Name, ProjectID: opts.ProjectID, Tags: opts.Tags, Limit: opts.PageSize}
	pages, err := loadbalancers.List(lc, lo).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list load balancers%s: %w", opts.describe(), Classify(err))
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, fmt.Errorf("list load balancers%s: decode: %w", opts.describe(), Classify(err))
	}
	out := make([]LoadBalancer, 0, len(lbs))
	for i := range lbs {
		out = append(out, loadBalancerFrom(&lbs[i]))
	}
	return out, nil
}

// GetLoadBalancer reads one load balancer.
func (c *Cloud) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	lc, err := c.Client(ServiceLoadBalancer)
	if err != nil {
		return nil, fmt.Errorf("get load balancer %s: %w", id, Classify(err))
	}
	lb, err := loadbalancers.Get(ctx, lc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get load balancer %s: %w", id, Classify(err))
	}
	out := loadBalancerFrom(lb)
	return &out, nil
}

// DeleteLoadBalancer deletes a load balancer, with its listeners, pools and monitors when cascade
// is set (Octavia deletes asynchronously: PENDING_DELETE, then 404).
func (c *Cloud) DeleteLoadBalancer(ctx context.Context, id string, cascade bool) error {
	lc, err := c.Client(ServiceLoadBalancer)
	if err != nil {
		return fmt.Errorf("delete load balancer %s: %w", id, Classify(err))
	}
	if err := loadbalancers.Delete(ctx, lc, id, loadbalancers.DeleteOpts{Cascade: cascade}).ExtractErr(); err != nil {
		return fmt.Errorf("delete load balancer %s (cascade %t): %w", id, cascade, Classify(err))
	}
	return nil
}

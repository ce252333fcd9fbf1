package openstack

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
)

func floatingIPFrom(f *floatingips.FloatingIP) FloatingIP {
	return FloatingIP{ID: f.ID, ProjectID: cmp.Or(f.ProjectID, f.TenantID), Address: f.FloatingIP, NetworkID: f.FloatingNetworkID,
		PortID: f.PortID, FixedIP: f.FixedIP, Status: f.Status, Description: f.Description}
}

// ListFloatingIPs lists every floating IP matching opts (ProjectID, Tags), all pages.
func (c *Cloud) ListFloatingIPs(ctx context.Context, opts ListOpts) ([]FloatingIP, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs: %w", Classify(err))
	}
	if err := opts.only("floating IPs", "ProjectID", "Tags"); err != nil {
		return nil, err
	}
	lo := floatingips.ListOpts{ProjectID: opts.ProjectID, Tags: strings.Join(opts.Tags, ","), Limit: opts.PageSize}
	pages, err := floatingips.List(nc, lo).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs%s: %w", opts.describe(), Classify(err))
	}
	fs, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs%s: decode: %w", opts.describe(), Classify(err))
	}
	out := make([]FloatingIP, 0, len(fs))
	for i := range fs {
		out = append(out, floatingIPFrom(&fs[i]))
	}
	return out, nil
}

// GetFloatingIP reads one floating IP.
func (c *Cloud) GetFloatingIP(ctx context.Context, id string) (*FloatingIP, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("get floating IP %s: %w", id, Classify(err))
	}
	f, err := floatingips.Get(ctx, nc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get floating IP %s: %w", id, Classify(err))
	}
	out := floatingIPFrom(f)
	return &out, nil
}

// DeleteFloatingIP deletes (releases) a floating IP.
func (c *Cloud) DeleteFloatingIP(ctx context.Context, id string) error {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return fmt.Errorf("delete floating IP %s: %w", id, Classify(err))
	}
	if err := floatingips.Delete(ctx, nc, id).ExtractErr(); err != nil {
		return fmt.Errorf("delete floating IP %s: %w", id, Classify(err))
	}
	return nil
}

package openstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

func portFrom(p *ports.Port) Port {
	out := Port{ID: p.ID, Name: p.Name, NetworkID: p.NetworkID, ProjectID: p.ProjectID, DeviceID: p.DeviceID,
		DeviceOwner: p.DeviceOwner, Status: p.Status, MACAddress: p.MACAddress, RevisionNumber: p.RevisionNumber,
		SecurityGroups: append([]string(nil), p.SecurityGroups...)}
	for _, ip := range p.FixedIPs {
		out.FixedIPs = append(out.FixedIPs, FixedIP{SubnetID: ip.SubnetID, IPAddress: ip.IPAddress})
	}
	for _, ap := range p.AllowedAddressPairs {
		out.AllowedAddressPairs = append(out.AllowedAddressPairs, AddressPair{IPAddress: ap.IPAddress, MACAddress: ap.MACAddress})
	}
	return out
}

// ListPorts lists every port matching opts (all filters apply), all pages.
func (c *Cloud) ListPorts(ctx context.Context, opts ListOpts) ([]Port, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("list ports: %w", Classify(err))
	}
	if err := opts.only("ports", "Name", "ProjectID", "NetworkID", "DeviceID", "DeviceOwner", "Tags"); err != nil {
		return nil, err
	}
	lo := ports.ListOpts{Name: opts.Name, ProjectID: opts.ProjectID, NetworkID: opts.NetworkID, DeviceID: opts.DeviceID,
		DeviceOwner: opts.DeviceOwner, Tags: strings.Join(opts.Tags, ","), Limit: opts.PageSize}
	pages, err := ports.List(nc, lo).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ports%s: %w", opts.describe(), Classify(err))
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, fmt.Errorf("list ports%s: decode: %w", opts.describe(), Classify(err))
	}
	out := make([]Port, 0, len(ps))
	for i := range ps {
		out = append(out, portFrom(&ps[i]))
	}
	return out, nil
}

// SetAllowedAddressPairs replaces a port's allowed address pairs (nil or empty clears them), only if the port
// is still at revision (If-Match; 0: unconditionally).
func (c *Cloud) SetAllowedAddressPairs(ctx context.Context, portID string, revision int, pairs []AddressPair) (*Port, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("set allowed address pairs of port %s: %w", portID, Classify(err))
	}
	aap := make([]ports.AddressPair, 0, len(pairs))
	for _, p := range pairs {
		aap = append(aap, ports.AddressPair{IPAddress: p.IPAddress, MACAddress: p.MACAddress})
	}
	opts := ports.UpdateOpts{AllowedAddressPairs: &aap}
	if revision > 0 {
		opts.RevisionNumber = &revision
	}
	p, err := ports.Update(ctx, nc, portID, opts).Extract()
	if err != nil {
		return nil, fmt.Errorf("set %d allowed address pairs of port %s at revision %d: %w", len(pairs), portID, revision, Classify(err))
	}
	out := portFrom(p)
	return &out, nil
}

// GetPort reads one port.
func (c *Cloud) GetPort(ctx context.Context, id string) (*Port, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("get port %s: %w", id, Classify(err))
	}
	p, err := ports.Get(ctx, nc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get port %s: %w", id, Classify(err))
	}
	out := portFrom(p)
	return &out, nil
}

// DeletePort deletes a port.
func (c *Cloud) DeletePort(ctx context.Context, id string) error {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return fmt.Errorf("delete port %s: %w", id, Classify(err))
	}
	if err := ports.Delete(ctx, nc, id).ExtractErr(); err != nil {
		return fmt.Errorf("delete port %s: %w", id, Classify(err))
	}
	return nil
}

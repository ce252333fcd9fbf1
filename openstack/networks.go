package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// GetNetwork reads one network.
func (c *Cloud) GetNetwork(ctx context.Context, id string) (*Network, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("get network %s: %w", id, Classify(err))
	}
	n, err := networks.Get(ctx, nc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get network %s: %w", id, Classify(err))
	}
	return &Network{ID: n.ID, Name: n.Name, ProjectID: n.ProjectID, Status: n.Status, Shared: n.Shared}, nil
}

// GetSubnet reads one subnet.
func (c *Cloud) GetSubnet(ctx context.Context, id string) (*Subnet, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("get subnet %s: %w", id, Classify(err))
	}
	s, err := subnets.Get(ctx, nc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get subnet %s: %w", id, Classify(err))
	}
	return &Subnet{ID: s.ID, Name: s.Name, ProjectID: s.ProjectID, NetworkID: s.NetworkID, CIDR: s.CIDR, IPVersion: s.IPVersion}, nil
}

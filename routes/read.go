package routes

import (
	"context"
	"fmt"

	"github.com/vitalsproject/vitals/openstack"
)

// Cloud is what a read and a removal of routes need: the router, and the project's ports and servers whose
// addresses make a nexthop live.
type Cloud interface {
	openstack.Routers
	openstack.Ports
	openstack.Servers
}

// ReadOptions say what one read takes.
type ReadOptions struct {
	RouterID  string
	ProjectID string
	// Ports and Servers select the address sources.
	Ports, Servers bool
	// SubnetID of the nodes (optional): a subnet without a single port is a bad read.
	SubnetID string
}

// Snapshot is one complete read: the router, and every address its routes may point at.
type Snapshot struct {
	Router  *openstack.Router
	Live    *Addresses
	Sources []SourceRead
}

// Read reads the router and every address source, completely or not at all: any failed list is an
// error, never an empty list.
func Read(ctx context.Context, cloud Cloud, o ReadOptions) (*Snapshot, error) {
	router, err := cloud.GetRouter(ctx, o.RouterID)
	if err != nil {
		return nil, fmt.Errorf("read router %s: %w", o.RouterID, err)
	}
	snap := &Snapshot{Router: router, Live: NewAddresses()}
	if o.Ports {
		ports, err := cloud.ListPorts(ctx, openstack.ListOpts{ProjectID: o.ProjectID})
		if err != nil {
			return nil, fmt.Errorf("list ports of project %s: %w", o.ProjectID, err)
		}
		inSubnet := 0
		for _, p := range ports {
			owner := "port " + p.ID
			if p.DeviceOwner != "" {
				owner += " (" + p.DeviceOwner + ")"
			}
			for _, ip := range p.FixedIPs {
				snap.Live.Add(ip.IPAddress, owner)
				if ip.SubnetID == o.SubnetID {
					inSubnet++
				}
			}
			for _, pair := range p.AllowedAddressPairs {
				snap.Live.Add(pair.IPAddress, owner+" allowed address pair")
			}
		}
		snap.Sources = append(snap.Sources, SourceRead{Name: "ports", Items: len(ports)})
		if o.SubnetID != "" {
			// Nodes' routes point into their subnet: a subnet without a single port is a bad read.
			snap.Sources = append(snap.Sources, SourceRead{Name: "ports in subnet " + o.SubnetID, Items: inSubnet})
		}
	}
	if o.Servers {
		servers, err := cloud.ListServers(ctx, openstack.ListOpts{ProjectID: o.ProjectID})
		if err != nil {
			return nil, fmt.Errorf("list servers of project %s: %w", o.ProjectID, err)
		}
		for _, sv := range servers {
			for _, a := range sv.Addresses {
				snap.Live.Add(a.Addr, "server "+sv.Name)
			}
		}
		snap.Sources = append(snap.Sources, SourceRead{Name: "servers", Items: len(servers)})
	}
	return snap, nil
}

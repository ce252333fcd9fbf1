package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/instanceactions"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/secgroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

func serverFrom(s *servers.Server) Server {
	out := Server{ID: s.ID, Name: s.Name, ProjectID: s.TenantID, Status: s.Status, VMState: s.VmState, TaskState: s.TaskState,
		Metadata: s.Metadata, Created: s.Created, Updated: s.Updated, HostID: s.HostID, Zone: s.AvailabilityZone}
	nets := make([]string, 0, len(s.Addresses))
	for n := range s.Addresses {
		nets = append(nets, n)
	}
	sort.Strings(nets)
	for _, n := range nets {
		// Each network holds a list of {addr, version, OS-EXT-IPS:type, OS-EXT-IPS-MAC:mac_addr}.
		raw, err := json.Marshal(s.Addresses[n])
		if err != nil {
			continue
		}
		var addrs []struct {
			Addr    string `json:"addr"`
			Version int    `json:"version"`
			Type    string `json:"OS-EXT-IPS:type"`
			MAC     string `json:"OS-EXT-IPS-MAC:mac_addr"`
		}
		if json.Unmarshal(raw, &addrs) != nil {
			continue
		}
		for _, a := range addrs {
			out.Addresses = append(out.Addresses, ServerAddress{Network: n, Addr: a.Addr, Version: a.Version, Type: a.Type, MAC: a.MAC})
		}
	}
	for _, g := range s.SecurityGroups {
		if name, ok := g["name"].(string); ok {
			out.SecurityGroups = append(out.SecurityGroups, name)
		}
	}
	return out
}

// ListServers lists every server of the token's project matching opts (Name exactly, ProjectID,
// Tags), all pages.
func (c *Cloud) ListServers(ctx context.Context, opts ListOpts) ([]Server, error) {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", Classify(err))
	}
	if err := opts.only("servers", "Name", "ProjectID", "Tags"); err != nil {
		return nil, err
	}
	lo := servers.ListOpts{Tags: strings.Join(opts.Tags, ","), Limit: opts.PageSize, TenantID: opts.ProjectID}
	if opts.Name != "" {
		lo.Name = "^" + regexp.QuoteMeta(opts.Name) + "$" // Nova matches names as regular expressions
	}
	pages, err := servers.List(cc, lo).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list servers%s: %w", opts.describe(), Classify(err))
	}
	ss, err := servers.ExtractServers(pages)
	if err != nil {
		return nil, fmt.Errorf("list servers%s: decode: %w", opts.describe(), Classify(err))
	}
	out := make([]Server, 0, len(ss))
	for i := range ss {
		if opts.ProjectID != "" && ss[i].TenantID != opts.ProjectID {
			continue // Nova ignores tenant_id without all_tenants
		}
		if opts.Name != "" && ss[i].Name != opts.Name {
			continue
		}
		out = append(out, serverFrom(&ss[i]))
	}
	return out, nil
}

// GetServer reads one server.
func (c *Cloud) GetServer(ctx context.Context, id string) (*Server, error) {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return nil, fmt.Errorf("get server %s: %w", id, Classify(err))
	}
	s, err := servers.Get(ctx, cc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get server %s: %w", id, Classify(err))
	}
	out := serverFrom(s)
	return &out, nil
}

// StartServer powers on a SHUTOFF server.
func (c *Cloud) StartServer(ctx context.Context, id string) error {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return fmt.Errorf("start server %s: %w", id, Classify(err))
	}
	if err := servers.Start(ctx, cc, id).ExtractErr(); err != nil {
		return fmt.Errorf("start server %s: %w", id, Classify(err))
	}
	return nil
}

// ListServerActions reads a server's instance-action log, oldest first.
func (c *Cloud) ListServerActions(ctx context.Context, id string) ([]ServerAction, error) {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return nil, fmt.Errorf("list the actions of server %s: %w", id, Classify(err))
	}
	pages, err := instanceactions.List(cc, id, nil).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the actions of server %s: %w", id, Classify(err))
	}
	list, err := instanceactions.ExtractInstanceActions(pages)
	if err != nil {
		return nil, fmt.Errorf("list the actions of server %s: %w", id, Classify(err))
	}
	out := make([]ServerAction, 0, len(list))
	for _, a := range list {
		out = append(out, ServerAction{Action: a.Action, UserID: a.UserID, RequestID: a.RequestID, StartTime: a.StartTime})
	}
	// Nova lists the newest first (by creation, then ID: its times may be to the second only, and two actions of
	// one second keep their order).
	slices.Reverse(out)
	slices.SortStableFunc(out, func(a, b ServerAction) int { return a.StartTime.Compare(b.StartTime) })
	return out, nil
}

// RebootServer reboots a server, HARD when hard is set.
func (c *Cloud) RebootServer(ctx context.Context, id string, hard bool) error {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return fmt.Errorf("reboot server %s: %w", id, Classify(err))
	}
	how := servers.SoftReboot
	if hard {
		how = servers.HardReboot
	}
	if err := servers.Reboot(ctx, cc, id, servers.RebootOpts{Type: how}).ExtractErr(); err != nil {
		return fmt.Errorf("reboot server %s (%s): %w", id, how, Classify(err))
	}
	return nil
}

// DeleteServer deletes a server (Nova deletes asynchronously: the server may show for a while).
func (c *Cloud) DeleteServer(ctx context.Context, id string) error {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return fmt.Errorf("delete server %s: %w", id, Classify(err))
	}
	if err := servers.Delete(ctx, cc, id).ExtractErr(); err != nil {
		return fmt.Errorf("delete server %s: %w", id, Classify(err))
	}
	return nil
}

// AddSecurityGroup adds the security group (name or ID) to every port of the server.
func (c *Cloud) AddSecurityGroup(ctx context.Context, serverID, group string) error {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return fmt.Errorf("add security group %s to server %s: %w", group, serverID, Classify(err))
	}
	if err := secgroups.AddServer(ctx, cc, serverID, group).ExtractErr(); err != nil {
		return fmt.Errorf("add security group %s to server %s: %w", group, serverID, Classify(err))
	}
	return nil
}

// RemoveSecurityGroup removes the security group (name or ID) from the server.
func (c *Cloud) RemoveSecurityGroup(ctx context.Context, serverID, group string) error {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return fmt.Errorf("remove security group %s from server %s: %w", group, serverID, Classify(err))
	}
	if err := secgroups.RemoveServer(ctx, cc, serverID, group).ExtractErr(); err != nil {
		return fmt.Errorf("remove security group %s from server %s: %w", group, serverID, Classify(err))
	}
	return nil
}

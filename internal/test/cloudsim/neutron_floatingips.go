package cloudsim

import (
	"net/http"
	"slices"
	"time"
)

// floatingIP is a Neutron floating IP: an address of an external network, associated with a port (or not).
type floatingIP struct {
	ID          string    `json:"id"`
	Project     string    `json:"project_id"`
	NetworkID   string    `json:"floating_network_id"`
	SubnetID    string    `json:"subnet_id"`
	Address     string    `json:"floating_ip_address"`
	PortID      string    `json:"port_id,omitempty"`
	FixedIP     string    `json:"fixed_ip_address,omitempty"`
	Description string    `json:"description"`
	Revision    int       `json:"revision_number"`
	Tags        []string  `json:"tags,omitempty"`
	Created     time.Time `json:"created_at"`
	Updated     time.Time `json:"updated_at"`
}

func (v *floatingIP) key() string         { return v.ID }
func (v *floatingIP) owner() string       { return v.Project }
func (v *floatingIP) revision() int       { return v.Revision }
func (v *floatingIP) touch(now time.Time) { v.Revision++; v.Updated = now }

// status is DOWN unassociated, ACTIVE on a port (as with an L3 agent).
func (v *floatingIP) status() string {
	if v.PortID == "" {
		return "DOWN"
	}
	return "ACTIVE"
}

type floatingIPView struct {
	ID          string   `json:"id"`
	TenantID    string   `json:"tenant_id"`
	ProjectID   string   `json:"project_id"`
	NetworkID   string   `json:"floating_network_id"`
	Address     string   `json:"floating_ip_address"`
	PortID      *string  `json:"port_id"`
	FixedIP     *string  `json:"fixed_ip_address"`
	RouterID    *string  `json:"router_id"`
	Status      string   `json:"status"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Revision    int      `json:"revision_number"`
	Created     string   `json:"created_at"`
	Updated     string   `json:"updated_at"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func viewFloatingIP(f *floatingIP) any {
	return &floatingIPView{ID: f.ID, TenantID: f.Project, ProjectID: f.Project, NetworkID: f.NetworkID, Address: f.Address,
		PortID: nullable(f.PortID), FixedIP: nullable(f.FixedIP), Status: f.status(), Description: f.Description,
		Tags: orEmpty(f.Tags), Revision: f.Revision, Created: neutronTime(f.Created), Updated: neutronTime(f.Updated)}
}

func floatingIPField(f *floatingIP, k string) ([]string, bool) {
	switch k {
	case "floating_network_id":
		return []string{f.NetworkID}, true
	case "floating_ip_address":
		return []string{f.Address}, true
	case "port_id":
		return []string{f.PortID}, true
	case "fixed_ip_address":
		return []string{f.FixedIP}, true
	case "description":
		return []string{f.Description}, true
	case "status":
		return []string{f.status()}, true
	}
	return commonField(k, f.ID, "", f.Project, f.Tags, f.Revision)
}

func (s *neutron) floatingIPs() resource[*floatingIP] {
	return resource[*floatingIP]{key: "floatingip", find: s.getFloatingIPLocked, view: plain(viewFloatingIP)}
}

func (s *cloud) getFloatingIPLocked(c *call, id string) (*floatingIP, error) {
	f, ok := s.st.fips.get(id)
	if !ok || !c.visible(f.Project) {
		return nil, errf(http.StatusNotFound, "FloatingIPNotFound", "Floating IP %s could not be found", id)
	}
	return f, nil
}

func (s *neutron) listFloatingIPs(c *call) (int, any, error) {
	return neutronList(c, s.st.fips, "floatingips", floatingIPField, viewFloatingIP)
}

func (s *neutron) getFloatingIP(c *call) (int, any, error) {
	return show(s.cloud, c, s.floatingIPs(), c.r.PathValue("id"))
}

type floatingIPFields struct {
	NetworkID   string   `json:"floating_network_id"`
	SubnetID    string   `json:"subnet_id"`
	Address     string   `json:"floating_ip_address"`
	PortID      *string  `json:"port_id"`
	Description string   `json:"description"`
	ProjectID   string   `json:"project_id"`
	TenantID    string   `json:"tenant_id"`
	Tags        []string `json:"tags"`
}

// createFloatingIP allocates an address of an external network's subnet (the first, or the one asked for)
// and associates it with the port asked for.
func (s *neutron) createFloatingIP(c *call) (int, any, error) {
	ids := func(b *floatingIPFields) (string, string) { return b.ProjectID, b.TenantID }
	return create(s, c, s.floatingIPs(), ids, func(owner string, b *floatingIPFields) (*floatingIP, error) {
		if b.NetworkID == "" {
			return nil, badRequest("Invalid input for floating_network_id. Reason: '' is not a valid UUID.")
		}
		n, ok := s.st.networks.get(b.NetworkID)
		if !ok || !(c.visible(n.Project) || n.External) {
			return nil, errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", b.NetworkID)
		}
		if !n.External {
			return nil, badRequest("Bad floatingip request: Network %s is not a valid external network.", n.ID)
		}
		if err := s.checkQuotaLocked(owner, "floatingip"); err != nil {
			return nil, err
		}
		sid := b.SubnetID
		if sid == "" && b.Address != "" {
			sid = s.subnetForIPLocked(n, b.Address)
		}
		if sid == "" && len(n.Subnets) > 0 {
			sid = n.Subnets[0]
		}
		sub, ok := s.st.subnets.get(sid)
		if !ok || sub.NetworkID != n.ID {
			return nil, badRequest("Bad floatingip request: Network %s does not contain any IPv4 subnet.", n.ID)
		}
		now := s.now()
		f := &floatingIP{ID: s.newUUID(), Project: owner, NetworkID: n.ID, SubnetID: sub.ID, Description: b.Description,
			Revision: 1, Tags: b.Tags, Created: now, Updated: now}
		if b.PortID != nil && *b.PortID != "" {
			if err := s.associateLocked(c, f, *b.PortID); err != nil {
				return nil, err
			}
		}
		addr, err := s.allocateIPLocked(sub, b.Address, f.ID)
		if err != nil {
			return nil, err
		}
		f.Address = addr
		s.st.fips.put(f)
		return f, nil
	})
}

// associateLocked puts f on a port of its project that has an address.
func (s *cloud) associateLocked(c *call, f *floatingIP, portID string) error {
	p, ok := s.st.ports.get(portID)
	if !ok || !c.visible(p.Project) || p.Project != f.Project {
		return errf(http.StatusNotFound, "PortNotFound", "Port %s could not be found.", portID)
	}
	if len(p.FixedIPs) == 0 {
		return badRequest("Bad floatingip request: Port %s does not have any IPv4 address.", p.ID)
	}
	if !s.reachableLocked(f.NetworkID, p.FixedIPs[0].SubnetID) {
		return errf(http.StatusNotFound, "ExternalGatewayForFloatingIPNotFound",
			"External network %s is not reachable from subnet %s.  Therefore, cannot associate Port %s with a Floating IP.",
			f.NetworkID, p.FixedIPs[0].SubnetID, p.ID)
	}
	for _, id := range s.st.fips.ids(f.Project) {
		if o := s.st.fips.m[id]; o.ID != f.ID && o.PortID == p.ID {
			return errf(http.StatusConflict, "FloatingIPPortAlreadyAssociated",
				"Cannot associate floating IP %s (%s) with port %s using fixed IP %s, as that fixed IP already has a floating IP on external network %s.",
				f.Address, f.ID, p.ID, p.FixedIPs[0].IPAddress, o.NetworkID)
		}
	}
	f.PortID, f.FixedIP = p.ID, p.FixedIPs[0].IPAddress
	return nil
}

func (s *neutron) updateFloatingIP(c *call) (int, any, error) {
	return update(s, c, s.floatingIPs(), nil, func(f *floatingIP, b *floatingIPFields) error {
		if b.PortID != nil {
			if *b.PortID == "" {
				f.PortID, f.FixedIP = "", ""
			} else if err := s.associateLocked(c, f, *b.PortID); err != nil {
				return err
			}
		}
		if b.Description != "" {
			f.Description = b.Description
		}
		return nil
	})
}

func (s *neutron) deleteFloatingIP(c *call) (int, any, error) {
	return remove(s, c, s.floatingIPs(), func(f *floatingIP) error {
		if idx := s.ipIndex[f.SubnetID]; idx != nil && idx[f.Address] == f.ID {
			delete(idx, f.Address)
		}
		s.st.fips.del(f.ID)
		return nil
	})
}

// reachableLocked: a router has its gateway on the external network and an interface on the subnet.
func (s *cloud) reachableLocked(external, subnetID string) bool {
	for _, r := range s.st.routers.values() {
		if r.GatewayNet == external && slices.Contains(r.Subnets, subnetID) {
			return true
		}
	}
	return false
}

// disassociateLocked takes the floating IPs off a port that goes, as Neutron does.
func (s *cloud) disassociateLocked(p *port) {
	for _, id := range s.st.fips.ids(p.Project) {
		if f := s.st.fips.m[id]; f.PortID == p.ID {
			f.PortID, f.FixedIP = "", ""
			f.touch(s.now())
		}
	}
}

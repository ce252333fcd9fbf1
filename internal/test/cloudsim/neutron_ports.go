package cloudsim

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

type portView struct {
	ID                  string        `json:"id"`
	Name                string        `json:"name"`
	TenantID            string        `json:"tenant_id"`
	ProjectID           string        `json:"project_id"`
	NetworkID           string        `json:"network_id"`
	DeviceID            string        `json:"device_id"`
	DeviceOwner         string        `json:"device_owner"`
	Status              string        `json:"status"`
	MACAddress          string        `json:"mac_address"`
	AdminStateUp        bool          `json:"admin_state_up"`
	FixedIPs            []fixedIP     `json:"fixed_ips"`
	AllowedAddressPairs []addressPair `json:"allowed_address_pairs"`
	SecurityGroups      []string      `json:"security_groups"`
	Description         string        `json:"description"`
	Tags                []string      `json:"tags"`
	Revision            int           `json:"revision_number"`
	Created             string        `json:"created_at"`
	Updated             string        `json:"updated_at"`
}

func viewPort(p *port) any {
	return &portView{ID: p.ID, Name: p.Name, TenantID: p.Project, ProjectID: p.Project, NetworkID: p.NetworkID,
		DeviceID: p.DeviceID, DeviceOwner: p.DeviceOwner, Status: p.Status, MACAddress: p.MAC, AdminStateUp: true,
		FixedIPs: orEmpty(p.FixedIPs), AllowedAddressPairs: orEmpty(p.AddressPairs),
		SecurityGroups: orEmpty(p.SecurityGroups), Tags: orEmpty(p.Tags), Revision: p.Revision,
		Created: neutronTime(p.Created), Updated: neutronTime(p.Updated)}
}

func portField(p *port, k string) ([]string, bool) {
	switch k {
	case "network_id":
		return []string{p.NetworkID}, true
	case "device_id":
		return []string{p.DeviceID}, true
	case "device_owner":
		return []string{p.DeviceOwner}, true
	case "status":
		return []string{p.Status}, true
	case "mac_address":
		return []string{p.MAC}, true
	case "security_groups":
		return p.SecurityGroups, true
	case "fixed_ips":
		var out []string
		for _, f := range p.FixedIPs {
			out = append(out, "ip_address="+f.IPAddress, "subnet_id="+f.SubnetID)
		}
		return out, true
	}
	return commonField(k, p.ID, p.Name, p.Project, p.Tags, p.Revision)
}

func (s *neutron) listPorts(c *call) (int, any, error) {
	return neutronList(c, s.st.ports, "ports", portField, viewPort)
}

func (s *cloud) getPortLocked(c *call, id string) (*port, error) {
	p, ok := s.st.ports.get(id)
	if !ok || !c.visible(p.Project) {
		return nil, errf(http.StatusNotFound, "PortNotFound", "Port %s could not be found.", id)
	}
	return p, nil
}

func (s *neutron) getPort(c *call) (int, any, error) {
	return show(s.cloud, c, s.ports(), c.r.PathValue("id"))
}

type portFields struct {
	Name           *string        `json:"name"`
	NetworkID      string         `json:"network_id"`
	DeviceID       *string        `json:"device_id"`
	DeviceOwner    *string        `json:"device_owner"`
	FixedIPs       *[]fixedIP     `json:"fixed_ips"`
	AddressPairs   *[]addressPair `json:"allowed_address_pairs"`
	SecurityGroups *[]string      `json:"security_groups"`
	MACAddress     string         `json:"mac_address"`
	ProjectID      string         `json:"project_id"`
	TenantID       string         `json:"tenant_id"`
	Tags           []string       `json:"tags"`
}

func (s *neutron) createPort(c *call) (int, any, error) {
	ids := func(b *portFields) (string, string) { return b.ProjectID, b.TenantID }
	return create(s, c, s.ports(), ids, func(owner string, b *portFields) (*port, error) {
		if b.NetworkID == "" {
			return nil, badRequest("Failed to parse request. Required attribute 'network_id' not specified")
		}
		n, err := s.getNetworkLocked(c, b.NetworkID)
		if err != nil {
			return nil, err
		}
		spec := portSpec{Network: n, Owner: owner, MAC: b.MACAddress, Tags: b.Tags}
		if b.Name != nil {
			spec.Name = *b.Name
		}
		if b.DeviceID != nil {
			spec.DeviceID = *b.DeviceID
		}
		if b.DeviceOwner != nil {
			spec.DeviceOwner = *b.DeviceOwner
		}
		if b.FixedIPs != nil {
			spec.FixedIPs = *b.FixedIPs
			spec.FixedIPsSet = true
		}
		if b.AddressPairs != nil {
			spec.Pairs = *b.AddressPairs
		}
		if b.SecurityGroups != nil {
			spec.Groups = *b.SecurityGroups
			spec.GroupsSet = true
		}
		return s.createPortLocked(c, spec)
	})
}

type portSpec struct {
	Network     *network
	Owner       string
	Name        string
	DeviceID    string
	DeviceOwner string
	MAC         string
	FixedIPs    []fixedIP
	FixedIPsSet bool
	Pairs       []addressPair
	Groups      []string
	GroupsSet   bool
	Tags        []string
	Status      string
}

// createPortLocked makes a port; c may be nil for seeding (no visibility checks).
func (s *cloud) createPortLocked(c *call, spec portSpec) (*port, error) {
	if err := s.checkQuotaLocked(spec.Owner, "port"); err != nil {
		return nil, err
	}
	now := s.now()
	p := &port{ID: s.newUUID(), Name: spec.Name, Project: spec.Owner, NetworkID: spec.Network.ID,
		DeviceID: spec.DeviceID, DeviceOwner: spec.DeviceOwner, Status: "DOWN", MAC: spec.MAC, Revision: 1,
		Tags: spec.Tags, Created: now, Updated: now}
	if spec.Status != "" {
		p.Status = spec.Status
	}
	if p.MAC == "" {
		p.MAC = s.newMAC()
	}
	pairs, err := validatePairs(spec.Pairs)
	if err != nil {
		return nil, err
	}
	p.AddressPairs = pairs
	if spec.GroupsSet {
		for _, g := range spec.Groups {
			sg, ok := s.st.secGroups.get(g)
			if !ok || (c != nil && !c.visible(sg.Project)) {
				return nil, errf(http.StatusNotFound, "SecurityGroupNotFound", "Security group %s does not exist", g)
			}
		}
		p.SecurityGroups = slices.Clone(spec.Groups)
	} else if !strings.HasPrefix(p.DeviceOwner, "network:") {
		if d := s.defaultGroupLocked(spec.Owner); d != "" {
			p.SecurityGroups = []string{d}
		}
	}
	// Addresses.
	var allocated []fixedIP
	undo := func() {
		for _, f := range allocated {
			delete(s.ipIndex[f.SubnetID], f.IPAddress)
		}
	}
	if spec.FixedIPsSet {
		for _, f := range spec.FixedIPs {
			sid := f.SubnetID
			if sid == "" && f.IPAddress != "" {
				sid = s.subnetForIPLocked(spec.Network, f.IPAddress)
			}
			sub, ok := s.st.subnets.get(sid)
			if !ok || sub.NetworkID != spec.Network.ID {
				undo()
				return nil, badRequest("Invalid input for operation: Failed to create port on network %s, because fixed_ips included invalid subnet %s.", spec.Network.ID, sid)
			}
			ip, err := s.allocateIPLocked(sub, f.IPAddress, p.ID)
			if err != nil {
				undo()
				return nil, err
			}
			allocated = append(allocated, fixedIP{SubnetID: sub.ID, IPAddress: ip})
		}
	} else if len(spec.Network.Subnets) > 0 {
		sub, _ := s.st.subnets.get(spec.Network.Subnets[0])
		ip, err := s.allocateIPLocked(sub, "", p.ID)
		if err != nil {
			return nil, err
		}
		allocated = append(allocated, fixedIP{SubnetID: sub.ID, IPAddress: ip})
	}
	p.FixedIPs = allocated
	s.st.ports.put(p)
	return p, nil
}

func (s *cloud) subnetForIPLocked(n *network, ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	for _, sid := range n.Subnets {
		if sub, ok := s.st.subnets.get(sid); ok {
			if p, err := netip.ParsePrefix(sub.CIDR); err == nil && p.Contains(a) {
				return sid
			}
		}
	}
	return ""
}

func validatePairs(in []addressPair) ([]addressPair, error) {
	out := make([]addressPair, 0, len(in))
	seen := map[addressPair]bool{}
	for _, ap := range in {
		if ap.IPAddress == "" {
			return nil, badRequest("Invalid input for allowed_address_pairs. Reason: AllowedAddressPair must contain ip_address.")
		}
		if _, err := netip.ParsePrefix(ap.IPAddress); err != nil {
			if _, err := netip.ParseAddr(ap.IPAddress); err != nil {
				return nil, badRequest("Invalid input for allowed_address_pairs. Reason: '%s' is not a valid IP address.", ap.IPAddress)
			}
		}
		if seen[ap] {
			return nil, badRequest("Request contains duplicate address pair: mac_address %s ip_address %s.", ap.MACAddress, ap.IPAddress)
		}
		seen[ap] = true
		out = append(out, ap)
	}
	return out, nil
}

func (s *neutron) updatePort(c *call) (int, any, error) {
	wait := func(b *portFields) time.Duration {
		if b.SecurityGroups != nil || b.AddressPairs != nil {
			return time.Duration(s.knob().SecurityGroupUpdateLatency)
		}
		return 0
	}
	return update(s, c, s.ports(), wait, func(p *port, b *portFields) error {
		if b.FixedIPs != nil {
			return badRequest("Updating fixed_ips is not supported by the simulator")
		}
		if b.AddressPairs != nil {
			pairs, err := validatePairs(*b.AddressPairs)
			if err != nil {
				return err
			}
			for i := range pairs {
				if pairs[i].MACAddress == "" {
					pairs[i].MACAddress = p.MAC
				}
			}
			p.AddressPairs = pairs
		}
		if b.SecurityGroups != nil {
			for _, g := range *b.SecurityGroups {
				if sg, ok := s.st.secGroups.get(g); !ok || !c.visible(sg.Project) {
					return errf(http.StatusNotFound, "SecurityGroupNotFound", "Security group %s does not exist", g)
				}
			}
			p.SecurityGroups = slices.Clone(*b.SecurityGroups)
		}
		if b.Name != nil {
			p.Name = *b.Name
		}
		if b.DeviceID != nil {
			p.DeviceID = *b.DeviceID
		}
		if b.DeviceOwner != nil {
			p.DeviceOwner = *b.DeviceOwner
		}
		if b.Tags != nil {
			p.Tags = b.Tags
		}
		return nil
	})
}

func (s *neutron) deletePort(c *call) (int, any, error) {
	return remove(s, c, s.ports(), func(p *port) error {
		if p.DeviceOwner == "network:router_interface" {
			return errf(http.StatusConflict, "PortInUse",
				"Port %s cannot be deleted directly via the port API: has device owner network:router_interface.", p.ID)
		}
		s.releaseIPsLocked(p)
		s.disassociateLocked(p)
		s.st.ports.del(p.ID)
		if srv, ok := s.st.servers.get(p.DeviceID); ok {
			srv.Ports = slices.DeleteFunc(srv.Ports, func(id string) bool { return id == p.ID })
		}
		return nil
	})
}

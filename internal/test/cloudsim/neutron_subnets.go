package cloudsim

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
)

type subnetView struct {
	ID              string              `json:"id"`
	Name            string              `json:"name"`
	TenantID        string              `json:"tenant_id"`
	ProjectID       string              `json:"project_id"`
	NetworkID       string              `json:"network_id"`
	CIDR            string              `json:"cidr"`
	IPVersion       int                 `json:"ip_version"`
	GatewayIP       string              `json:"gateway_ip"`
	EnableDHCP      bool                `json:"enable_dhcp"`
	AllocationPools []map[string]string `json:"allocation_pools"`
	DNSNameservers  []string            `json:"dns_nameservers"`
	HostRoutes      []any               `json:"host_routes"`
	Description     string              `json:"description"`
	Tags            []string            `json:"tags"`
	Revision        int                 `json:"revision_number"`
	Created         string              `json:"created_at"`
	Updated         string              `json:"updated_at"`
}

func viewSubnet(n *subnet) any {
	pool := []map[string]string{}
	if p, err := netip.ParsePrefix(n.CIDR); err == nil {
		start := p.Masked().Addr().Next().Next()
		end := lastAddr(p).Prev()
		pool = append(pool, map[string]string{"start": start.String(), "end": end.String()})
	}
	return &subnetView{ID: n.ID, Name: n.Name, TenantID: n.Project, ProjectID: n.Project, NetworkID: n.NetworkID,
		CIDR: n.CIDR, IPVersion: n.IPVersion, GatewayIP: n.GatewayIP, EnableDHCP: true, AllocationPools: pool,
		DNSNameservers: []string{}, HostRoutes: []any{}, Tags: []string{}, Revision: n.Revision,
		Created: neutronTime(n.Created), Updated: neutronTime(n.Updated)}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 1 << (7 - j)
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func subnetField(n *subnet, k string) ([]string, bool) {
	switch k {
	case "network_id":
		return []string{n.NetworkID}, true
	case "cidr":
		return []string{n.CIDR}, true
	case "ip_version":
		return []string{strconv.Itoa(n.IPVersion)}, true
	case "gateway_ip":
		return []string{n.GatewayIP}, true
	}
	return commonField(k, n.ID, n.Name, n.Project, nil, n.Revision)
}

func (s *neutron) listSubnets(c *call) (int, any, error) {
	return neutronList(c, s.st.subnets, "subnets", subnetField, viewSubnet)
}

func (s *cloud) getSubnetLocked(c *call, id string) (*subnet, error) {
	n, ok := s.st.subnets.get(id)
	if !ok || !c.visible(n.Project) {
		return nil, errf(http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", id)
	}
	return n, nil
}

func (s *neutron) getSubnet(c *call) (int, any, error) {
	return show(s.cloud, c, s.subnets(), c.r.PathValue("id"))
}

func (s *neutron) createSubnet(c *call) (int, any, error) {
	var b struct {
		Subnet *struct {
			Name      string  `json:"name"`
			NetworkID string  `json:"network_id"`
			CIDR      string  `json:"cidr"`
			IPVersion int     `json:"ip_version"`
			GatewayIP *string `json:"gateway_ip"`
			ProjectID string  `json:"project_id"`
			TenantID  string  `json:"tenant_id"`
		} `json:"subnet"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	sb := b.Subnet
	if sb == nil {
		return 0, nil, badRequest("Resource body required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb.NetworkID == "" {
		return 0, nil, badRequest("Failed to parse request. Required attribute 'network_id' not specified")
	}
	n, err := s.getNetworkLocked(c, sb.NetworkID)
	if err != nil {
		return 0, nil, err
	}
	owner, err := c.ownerFor(sb.ProjectID, sb.TenantID)
	if err != nil {
		return 0, nil, err
	}
	gw := ""
	if sb.GatewayIP != nil {
		gw = *sb.GatewayIP
	}
	sub, err := s.addSubnetLocked(owner, n, sb.Name, sb.CIDR, sb.IPVersion, gw, sb.GatewayIP == nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"subnet": viewSubnet(sub)}, nil
}

func (s *cloud) addSubnetLocked(owner string, n *network, name, cidr string, ipVersion int, gw string, defaultGW bool) (*subnet, error) {
	if err := s.checkQuotaLocked(owner, "subnet"); err != nil {
		return nil, err
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, badRequest("Invalid input for cidr. Reason: '%s' is not a valid IP subnet.", cidr)
	}
	v := 4
	if p.Addr().Is6() {
		v = 6
	}
	if ipVersion != 0 && ipVersion != v {
		return nil, badRequest("Invalid input for operation: cidr %s does not match ip_version %d.", cidr, ipVersion)
	}
	if p.Bits() > p.Addr().BitLen()-2 {
		return nil, badRequest("Invalid input for operation: cidr %s is too small for a subnet.", cidr)
	}
	for _, sid := range n.Subnets {
		if o, ok := s.st.subnets.get(sid); ok {
			if op, err := netip.ParsePrefix(o.CIDR); err == nil && op.Overlaps(p) {
				return nil, badRequest("Invalid input for operation: Requested subnet with cidr: %s for network: %s overlaps with another subnet.", cidr, n.ID)
			}
		}
	}
	if defaultGW {
		gw = p.Masked().Addr().Next().String()
	} else if gw != "" {
		a, err := netip.ParseAddr(gw)
		if err != nil || !p.Contains(a) {
			return nil, badRequest("Invalid input for operation: Gateway IP %s conflicts with allocation pool or is not in %s.", gw, cidr)
		}
	}
	now := s.now()
	sub := &subnet{ID: s.newUUID(), Name: name, Project: owner, NetworkID: n.ID, CIDR: p.Masked().String(),
		IPVersion: v, GatewayIP: gw, Revision: 0, Created: now, Updated: now}
	s.st.subnets.put(sub)
	n.Subnets = append(n.Subnets, sub.ID)
	n.Revision++
	n.Updated = now
	return sub, nil
}

func (s *neutron) deleteSubnet(c *call) (int, any, error) {
	return remove(s, c, s.subnets(), func(sub *subnet) error {
		if len(s.ipIndex[sub.ID]) > 0 {
			return errf(http.StatusConflict, "SubnetInUse",
				"Unable to complete operation on subnet %s: One or more ports have an IP allocation from this subnet.", sub.ID)
		}
		if n, ok := s.st.networks.get(sub.NetworkID); ok {
			n.Subnets = slices.DeleteFunc(n.Subnets, func(id string) bool { return id == sub.ID })
			n.Revision++
		}
		delete(s.ipIndex, sub.ID)
		s.st.subnets.del(sub.ID)
		return nil
	})
}

// allocateIPLocked reserves an address on a subnet: want, or the next free one.
func (s *cloud) allocateIPLocked(sub *subnet, want, portID string) (string, error) {
	idx := s.ipIndex[sub.ID]
	if idx == nil {
		idx = map[string]string{}
		s.ipIndex[sub.ID] = idx
	}
	p, err := netip.ParsePrefix(sub.CIDR)
	if err != nil {
		return "", badRequest("subnet %s has a bad cidr %s", sub.ID, sub.CIDR)
	}
	if want != "" {
		a, err := netip.ParseAddr(want)
		if err != nil || !p.Contains(a) {
			return "", badRequest("Invalid input for operation: IP address %s is not a valid IP for the specified subnet.", want)
		}
		if _, taken := idx[a.String()]; taken || a.String() == sub.GatewayIP {
			return "", errf(http.StatusConflict, "IpAddressAlreadyAllocated",
				"IP address %s already allocated in subnet %s", want, sub.ID)
		}
		idx[a.String()] = portID
		return a.String(), nil
	}
	last := lastAddr(p)
	a := p.Masked().Addr().Next().Next()
	for i := 0; i < sub.NextHost && a.Less(last); i++ {
		a = a.Next()
	}
	for tries := 0; a.IsValid() && a.Less(last); tries++ {
		if _, taken := idx[a.String()]; !taken && a.String() != sub.GatewayIP {
			idx[a.String()] = portID
			sub.NextHost++
			return a.String(), nil
		}
		a = a.Next()
		sub.NextHost++
		if tries > 1<<16 {
			break
		}
	}
	// Wrap around once.
	for a = p.Masked().Addr().Next().Next(); a.Less(last); a = a.Next() {
		if _, taken := idx[a.String()]; !taken && a.String() != sub.GatewayIP {
			idx[a.String()] = portID
			return a.String(), nil
		}
	}
	return "", errf(http.StatusConflict, "IpAddressGenerationFailure", "No more IP addresses available on network %s.", sub.NetworkID)
}

func (s *cloud) releaseIPsLocked(p *port) {
	for _, f := range p.FixedIPs {
		if idx := s.ipIndex[f.SubnetID]; idx != nil && idx[f.IPAddress] == p.ID {
			delete(idx, f.IPAddress)
		}
	}
}

package cloudsim

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

const nprefix = "/networking/v2.0"

func (s *neutron) routes(mux *http.ServeMux, api apiFunc) {
	h := func(pattern string, fn handlerFunc) { mux.Handle(pattern, api(svcNetwork, true, fn)) }
	mux.Handle("GET /networking/{$}", api(svcNetwork, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"versions": []any{map[string]any{"id": "v2.0", "status": "CURRENT",
			"links": []any{map[string]string{"rel": "self", "href": c.baseURL() + nprefix + "/"}}}}}, nil
	}))
	h("GET "+nprefix+"/{$}", s.neutronResources)
	h("GET "+nprefix, s.neutronResources)
	h("GET "+nprefix+"/extensions", func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"extensions": neutronExtensions()}, nil
	})
	h("GET "+nprefix+"/extensions/{alias}", func(c *call) (int, any, error) {
		for _, e := range neutronExtensions() {
			if e["alias"] == c.r.PathValue("alias") {
				return http.StatusOK, map[string]any{"extension": e}, nil
			}
		}
		return 0, nil, errf(http.StatusNotFound, "HTTPNotFound", "Extension with alias %s does not exist", c.r.PathValue("alias"))
	})

	h("GET "+nprefix+"/networks", s.listNetworks)
	h("POST "+nprefix+"/networks", s.createNetwork)
	h("GET "+nprefix+"/networks/{id}", s.getNetwork)
	h("PUT "+nprefix+"/networks/{id}", s.updateNetwork)
	h("DELETE "+nprefix+"/networks/{id}", s.deleteNetwork)

	h("GET "+nprefix+"/subnets", s.listSubnets)
	h("POST "+nprefix+"/subnets", s.createSubnet)
	h("GET "+nprefix+"/subnets/{id}", s.getSubnet)
	h("DELETE "+nprefix+"/subnets/{id}", s.deleteSubnet)

	h("GET "+nprefix+"/ports", s.listPorts)
	h("POST "+nprefix+"/ports", s.createPort)
	h("GET "+nprefix+"/ports/{id}", s.getPort)
	h("PUT "+nprefix+"/ports/{id}", s.updatePort)
	h("DELETE "+nprefix+"/ports/{id}", s.deletePort)

	h("GET "+nprefix+"/security-groups", s.listSecGroups)
	h("POST "+nprefix+"/security-groups", s.createSecGroup)
	h("GET "+nprefix+"/security-groups/{id}", s.getSecGroup)
	h("PUT "+nprefix+"/security-groups/{id}", s.updateSecGroup)
	h("DELETE "+nprefix+"/security-groups/{id}", s.deleteSecGroup)

	h("GET "+nprefix+"/security-group-rules", s.listRules)
	h("POST "+nprefix+"/security-group-rules", s.createRule)
	h("GET "+nprefix+"/security-group-rules/{id}", s.getRule)
	h("DELETE "+nprefix+"/security-group-rules/{id}", s.deleteRule)

	h("GET "+nprefix+"/routers", s.listRouters)
	h("POST "+nprefix+"/routers", s.createRouter)
	h("GET "+nprefix+"/routers/{id}", s.getRouter)
	h("PUT "+nprefix+"/routers/{id}", s.updateRouter)
	h("DELETE "+nprefix+"/routers/{id}", s.deleteRouter)
	h("PUT "+nprefix+"/routers/{id}/add_extraroutes", s.addExtraRoutes)
	h("PUT "+nprefix+"/routers/{id}/remove_extraroutes", s.removeExtraRoutes)
	h("PUT "+nprefix+"/routers/{id}/add_router_interface", s.addRouterInterface)
	h("PUT "+nprefix+"/routers/{id}/remove_router_interface", s.removeRouterInterface)

	h("GET "+nprefix+"/quotas", s.listQuotas)
	h("GET "+nprefix+"/quotas/{project}", s.getQuota)
	h("GET "+nprefix+"/quotas/{project}/{details}", s.getQuotaDetails)
	h("PUT "+nprefix+"/quotas/{project}", s.updateQuota)
	h("DELETE "+nprefix+"/quotas/{project}", s.deleteQuota)

	mux.Handle("/networking/", api(svcNetwork, false, notFound))
}

func (s *neutron) neutronResources(c *call) (int, any, error) {
	var res []any
	for _, r := range [][2]string{{"network", "networks"}, {"subnet", "subnets"}, {"port", "ports"},
		{"security_group", "security-groups"}, {"security_group_rule", "security-group-rules"},
		{"router", "routers"}, {"quota", "quotas"}} {
		res = append(res, map[string]any{"name": r[0], "collection": r[1],
			"links": []any{map[string]string{"rel": "self", "href": c.baseURL() + nprefix + "/" + r[1]}}})
	}
	return http.StatusOK, map[string]any{"resources": res}, nil
}

func neutronExtensions() []map[string]any {
	ext := [][3]string{
		{"router", "Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 Neutron networks and access to external networks via a NAT gateway."},
		{"extraroute", "Neutron Extra Route", "Extra routes configuration for L3 router"},
		{"extraroute-atomic", "Atomically add/remove extra routes", "Edit extra routes of a router on server side by atomically adding/removing extra routes"},
		{"standard-attr-revisions", "Resource revision numbers", "This extension will display the revision number of neutron resources."},
		{"revision-if-match", "If-Match constraints based on revision_number", "Extension indicating that If-Match based on revision_number is supported."},
		{"quotas", "Quota management support", "Expose functions for quotas management per project"},
		{"quota_details", "Quota details management support", "Expose functions for quotas usage statistics per project"},
		{"security-group", "security-group", "The security groups extension."},
		{"allowed-address-pairs", "Allowed Address Pairs", "Provides allowed address pairs"},
		{"external-net", "Neutron external network", "Adds external network attribute to network resource."},
		{"standard-attr-tag", "Tag support for resources with standard attribute: subnet, trunk, network_segment_range, router, network, policy, subnetpool, port, security_group, floatingip", "Enables to set tag on resources with standard attribute."},
		{"standard-attr-timestamp", "Resource timestamps", "Adds created_at and updated_at fields to all Neutron resources that have Neutron standard attributes."},
		{"standard-attr-description", "standard-attr-description", "Extension to add descriptions to standard attributes"},
		{"project-id", "project_id field enabled", "Extension that indicates that project_id field is enabled."},
		{"pagination", "Pagination support", "Extension that indicates that pagination is enabled."},
		{"sorting", "Sorting support", "Extension that indicates that sorting is enabled."},
	}
	out := make([]map[string]any, 0, len(ext))
	for _, e := range ext {
		out = append(out, map[string]any{"alias": e[0], "name": e[1], "description": e[2],
			"updated": "2013-02-03T10:00:00-00:00", "links": []any{}})
	}
	return out
}

// neutronScope is the project whose index a list walks: the caller's, or for an admin the one
// asked for with project_id/tenant_id, or all ("").
func (c *call) neutronScope() string {
	if !c.admin() {
		return c.project()
	}
	q := c.values()
	if v := q["project_id"]; len(v) == 1 {
		return v[0]
	}
	if v := q["tenant_id"]; len(v) == 1 {
		return v[0]
	}
	return ""
}

func (c *call) visible(owner string) bool { return c.admin() || owner == c.project() }

// ownerFor is the project a created resource belongs to.
func (c *call) ownerFor(projectID, tenantID string) (string, error) {
	p := projectID
	if p == "" {
		p = tenantID
	}
	if p == "" || p == c.project() {
		return c.project(), nil
	}
	if !c.admin() {
		return "", errf(http.StatusForbidden, "HTTPForbidden", "Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges")
	}
	if !c.s.id.hasProject(p) {
		return "", badRequest("Invalid input for operation: project %s does not exist.", p)
	}
	return p, nil
}

// ifMatch enforces Neutron's If-Match: revision_number=N.
func (c *call) ifMatch(current int) error {
	h := c.r.Header.Get("If-Match")
	if h == "" {
		return nil
	}
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		v, ok := strings.CutPrefix(part, "revision_number=")
		if !ok {
			return badRequest("Invalid If-Match header %q: expected revision_number=N", h)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return badRequest("Invalid If-Match header %q: expected revision_number=N", h)
		}
		if n != current {
			return errf(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
				"Constrained to %d, but current revision is %d", n, current)
		}
	}
	return nil
}

func neutronList[T item](c *call, coll *coll[T], key string, field func(T, string) ([]string, bool), view func(T) any) (int, any, error) {
	limit, err := c.limit(0)
	if err != nil {
		return 0, nil, err
	}
	q := c.values()
	c.s.mu.RLock()
	defer c.s.mu.RUnlock()
	pg, err := list(coll, c.neutronScope(), c.query("marker"), limit, func(v T) bool {
		if !c.visible(v.owner()) {
			return false
		}
		return matchFilters(q, func(k string) ([]string, bool) { return field(v, k) })
	})
	if err != nil {
		return 0, nil, err
	}
	out := make([]any, 0, len(pg.items))
	for _, v := range pg.items {
		out = append(out, view(v))
	}
	if fields := c.values()["fields"]; len(fields) > 0 {
		if out, err = selectFields(out, fields); err != nil {
			return 0, nil, err
		}
	}
	body := map[string]any{key: out}
	if pg.more {
		body[key+"_links"] = c.nextLink(pg.items[len(pg.items)-1].key())
	}
	return http.StatusOK, body, nil
}

func commonField(k, id, name, project string, tags []string, revision int) ([]string, bool) {
	switch k {
	case "id":
		return []string{id}, true
	case "name":
		return []string{name}, true
	case "project_id", "tenant_id":
		return []string{project}, true
	case "tags":
		return tags, true
	case "revision_number":
		return []string{strconv.Itoa(revision)}, true
	}
	return nil, false
}

// Networks.

type networkView struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	TenantID     string   `json:"tenant_id"`
	ProjectID    string   `json:"project_id"`
	Status       string   `json:"status"`
	AdminStateUp bool     `json:"admin_state_up"`
	Shared       bool     `json:"shared"`
	External     bool     `json:"router:external"`
	Subnets      []string `json:"subnets"`
	MTU          int      `json:"mtu"`
	Description  string   `json:"description"`
	Tags         []string `json:"tags"`
	Revision     int      `json:"revision_number"`
	Created      string   `json:"created_at"`
	Updated      string   `json:"updated_at"`
}

func viewNetwork(n *network) any {
	return &networkView{ID: n.ID, Name: n.Name, TenantID: n.Project, ProjectID: n.Project, Status: "ACTIVE",
		AdminStateUp: true, External: n.External, Subnets: orEmpty(n.Subnets), MTU: 1450, Tags: orEmpty(n.Tags),
		Revision: n.Revision, Created: neutronTime(n.Created), Updated: neutronTime(n.Updated)}
}

func networkField(n *network, k string) ([]string, bool) {
	if k == "router:external" {
		return []string{boolStr(n.External), strings.ToLower(boolStr(n.External))}, true
	}
	if k == "status" {
		return []string{"ACTIVE"}, true
	}
	return commonField(k, n.ID, n.Name, n.Project, n.Tags, n.Revision)
}

func (s *neutron) listNetworks(c *call) (int, any, error) {
	return neutronList(c, s.st.networks, "networks", networkField, viewNetwork)
}

func (s *cloud) getNetworkLocked(c *call, id string) (*network, error) {
	n, ok := s.st.networks.get(id)
	if !ok || !(c.visible(n.Project) || n.External) {
		return nil, errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", id)
	}
	return n, nil
}

func (s *neutron) getNetwork(c *call) (int, any, error) {
	return show(s, c, s.networks())
}

type networkFields struct {
	Name      *string  `json:"name"`
	ProjectID string   `json:"project_id"`
	TenantID  string   `json:"tenant_id"`
	External  *bool    `json:"router:external"`
	Tags      []string `json:"tags"`
}

func (s *neutron) createNetwork(c *call) (int, any, error) {
	ids := func(b *networkFields) (string, string) { return b.ProjectID, b.TenantID }
	return create(s, c, s.networks(), ids, func(owner string, b *networkFields) (*network, error) {
		if err := s.checkQuotaLocked(owner, "network"); err != nil {
			return nil, err
		}
		now := s.now()
		n := &network{ID: s.newUUID(), Project: owner, Revision: 1, Created: now, Updated: now, Tags: b.Tags}
		if b.Name != nil {
			n.Name = *b.Name
		}
		if b.External != nil {
			if *b.External && !c.admin() {
				return nil, errf(http.StatusForbidden, "HTTPForbidden", "(rule:create_network:router:external) is disallowed by policy")
			}
			n.External = *b.External
		}
		s.st.networks.put(n)
		return n, nil
	})
}

func (s *neutron) updateNetwork(c *call) (int, any, error) {
	return update(s, c, s.networks(), nil, func(n *network, b *networkFields) error {
		if b.Name != nil {
			n.Name = *b.Name
		}
		if b.Tags != nil {
			n.Tags = b.Tags
		}
		return nil
	})
}

func (s *neutron) deleteNetwork(c *call) (int, any, error) {
	return remove(s, c, s.networks(), func(n *network) error {
		for _, id := range s.st.ports.ids(n.Project) {
			if p := s.st.ports.m[id]; p.NetworkID == n.ID && p.DeviceOwner != "network:dhcp" {
				return errf(http.StatusConflict, "NetworkInUse",
					"Unable to complete operation on network %s. There are one or more ports still in use on the network.", n.ID)
			}
		}
		for _, sid := range n.Subnets {
			s.st.subnets.del(sid)
			delete(s.ipIndex, sid)
		}
		s.st.networks.del(n.ID)
		return nil
	})
}

// Subnets.

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
	return show(s, c, s.subnets())
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

// Ports.

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
	return show(s, c, s.ports())
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
		s.st.ports.del(p.ID)
		if srv, ok := s.st.servers.get(p.DeviceID); ok {
			srv.Ports = slices.DeleteFunc(srv.Ports, func(id string) bool { return id == p.ID })
		}
		return nil
	})
}

// Security groups.

type ruleView struct {
	ID             string  `json:"id"`
	TenantID       string  `json:"tenant_id"`
	ProjectID      string  `json:"project_id"`
	GroupID        string  `json:"security_group_id"`
	Direction      string  `json:"direction"`
	EtherType      string  `json:"ethertype"`
	Protocol       *string `json:"protocol"`
	PortRangeMin   *int    `json:"port_range_min"`
	PortRangeMax   *int    `json:"port_range_max"`
	RemoteIPPrefix *string `json:"remote_ip_prefix"`
	RemoteGroupID  *string `json:"remote_group_id"`
	Description    string  `json:"description"`
	Revision       int     `json:"revision_number"`
	Created        string  `json:"created_at"`
	Updated        string  `json:"updated_at"`
}

func viewRule(r *sgRule) any {
	return &ruleView{ID: r.ID, TenantID: r.Project, ProjectID: r.Project, GroupID: r.GroupID, Direction: r.Direction,
		EtherType: r.EtherType, Protocol: r.Protocol, PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax,
		RemoteIPPrefix: r.RemoteIPPrefix, RemoteGroupID: r.RemoteGroupID, Description: r.Description,
		Revision: r.Revision, Created: neutronTime(r.Created), Updated: neutronTime(r.Updated)}
}

type secGroupView struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	TenantID    string   `json:"tenant_id"`
	ProjectID   string   `json:"project_id"`
	Rules       []any    `json:"security_group_rules"`
	Stateful    bool     `json:"stateful"`
	Tags        []string `json:"tags"`
	Revision    int      `json:"revision_number"`
	Created     string   `json:"created_at"`
	Updated     string   `json:"updated_at"`
}

func (s *neutron) viewSecGroup(g *secGroup) any {
	rules := make([]any, 0, len(g.Rules))
	for _, id := range g.Rules {
		if r, ok := s.st.sgRules.get(id); ok {
			rules = append(rules, viewRule(r))
		}
	}
	return &secGroupView{ID: g.ID, Name: g.Name, Description: g.Description, TenantID: g.Project, ProjectID: g.Project,
		Rules: rules, Stateful: true, Tags: orEmpty(g.Tags), Revision: g.Revision,
		Created: neutronTime(g.Created), Updated: neutronTime(g.Updated)}
}

func secGroupField(g *secGroup, k string) ([]string, bool) {
	if k == "description" {
		return []string{g.Description}, true
	}
	return commonField(k, g.ID, g.Name, g.Project, g.Tags, g.Revision)
}

func (s *neutron) listSecGroups(c *call) (int, any, error) {
	return neutronList(c, s.st.secGroups, "security_groups", secGroupField, s.viewSecGroup)
}

func (s *cloud) defaultGroupLocked(project string) string {
	for _, id := range s.st.secGroups.ids(project) {
		if g := s.st.secGroups.m[id]; g.Name == "default" {
			return g.ID
		}
	}
	return ""
}

func (s *cloud) createSecGroupLocked(project, name, description string) *secGroup {
	now := s.now()
	g := &secGroup{ID: s.newUUID(), Name: name, Description: description, Project: project, Revision: 1, Created: now, Updated: now}
	s.st.secGroups.put(g)
	for _, et := range []string{"IPv4", "IPv6"} {
		r := &sgRule{ID: s.newUUID(), Project: project, GroupID: g.ID, Direction: "egress", EtherType: et,
			Revision: 0, Created: now, Updated: now}
		s.st.sgRules.put(r)
		g.Rules = append(g.Rules, r.ID)
	}
	if name == "default" {
		for _, et := range []string{"IPv4", "IPv6"} {
			gid := g.ID
			r := &sgRule{ID: s.newUUID(), Project: project, GroupID: g.ID, Direction: "ingress", EtherType: et,
				RemoteGroupID: &gid, Revision: 0, Created: now, Updated: now}
			s.st.sgRules.put(r)
			g.Rules = append(g.Rules, r.ID)
		}
	}
	return g
}

func (s *cloud) getSecGroupLocked(c *call, id string) (*secGroup, error) {
	g, ok := s.st.secGroups.get(id)
	if !ok || !c.visible(g.Project) {
		return nil, errf(http.StatusNotFound, "SecurityGroupNotFound", "Security group %s does not exist", id)
	}
	return g, nil
}

func (s *neutron) getSecGroup(c *call) (int, any, error) {
	return show(s, c, s.secGroups())
}

type secGroupFields struct {
	Name        *string  `json:"name"`
	Description *string  `json:"description"`
	ProjectID   string   `json:"project_id"`
	TenantID    string   `json:"tenant_id"`
	Tags        []string `json:"tags"`
}

func (s *neutron) createSecGroup(c *call) (int, any, error) {
	ids := func(b *secGroupFields) (string, string) { return b.ProjectID, b.TenantID }
	return create(s, c, s.secGroups(), ids, func(owner string, b *secGroupFields) (*secGroup, error) {
		name, desc := "", ""
		if b.Name != nil {
			name = *b.Name
		}
		if b.Description != nil {
			desc = *b.Description
		}
		if name == "default" {
			return nil, errf(http.StatusConflict, "SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
		}
		if err := s.checkQuotaLocked(owner, "security_group"); err != nil {
			return nil, err
		}
		g := s.createSecGroupLocked(owner, name, desc)
		g.Tags = b.Tags
		return g, nil
	})
}

func (s *neutron) updateSecGroup(c *call) (int, any, error) {
	wait := func(*secGroupFields) time.Duration { return time.Duration(s.knob().SecurityGroupUpdateLatency) }
	return update(s, c, s.secGroups(), wait, func(g *secGroup, b *secGroupFields) error {
		if b.Name != nil {
			if g.Name == "default" && *b.Name != "default" {
				return errf(http.StatusConflict, "SecurityGroupCannotUpdateDefault", "Updating default security group not allowed.")
			}
			g.Name = *b.Name
		}
		if b.Description != nil {
			g.Description = *b.Description
		}
		if b.Tags != nil {
			g.Tags = b.Tags
		}
		return nil
	})
}

func (s *neutron) deleteSecGroup(c *call) (int, any, error) {
	return remove(s, c, s.secGroups(), func(g *secGroup) error {
		if g.Name == "default" && !c.admin() {
			return errf(http.StatusConflict, "SecurityGroupCannotRemoveDefault", "Insufficient rights for removing default security group.")
		}
		for _, id := range s.st.ports.ids(g.Project) {
			if slices.Contains(s.st.ports.m[id].SecurityGroups, g.ID) {
				return errf(http.StatusConflict, "SecurityGroupInUse", "Security Group %s in use.", g.ID)
			}
		}
		for _, rid := range g.Rules {
			s.st.sgRules.del(rid)
		}
		s.st.secGroups.del(g.ID)
		return nil
	})
}

func ruleField(r *sgRule, k string) ([]string, bool) {
	str := func(p *string) []string {
		if p == nil {
			return []string{""}
		}
		return []string{*p}
	}
	switch k {
	case "security_group_id":
		return []string{r.GroupID}, true
	case "direction":
		return []string{r.Direction}, true
	case "ethertype":
		return []string{r.EtherType}, true
	case "protocol":
		return str(r.Protocol), true
	case "remote_ip_prefix":
		return str(r.RemoteIPPrefix), true
	case "remote_group_id":
		return str(r.RemoteGroupID), true
	case "description":
		return []string{r.Description}, true
	}
	return commonField(k, r.ID, "", r.Project, nil, r.Revision)
}

func (s *neutron) listRules(c *call) (int, any, error) {
	return neutronList(c, s.st.sgRules, "security_group_rules", ruleField, viewRule)
}

func (s *neutron) getRule(c *call) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.st.sgRules.get(c.r.PathValue("id"))
	if !ok || !c.visible(r.Project) {
		return 0, nil, errf(http.StatusNotFound, "SecurityGroupRuleNotFound", "Security group rule %s does not exist", c.r.PathValue("id"))
	}
	return http.StatusOK, map[string]any{"security_group_rule": viewRule(r)}, nil
}

var protocolNumbers = map[string]int{"icmp": 1, "tcp": 6, "udp": 17, "gre": 47, "esp": 50, "ah": 51, "ipv6-icmp": 58, "icmpv6": 58, "sctp": 132, "vrrp": 112}

func (s *neutron) createRule(c *call) (int, any, error) {
	var b struct {
		Rule *struct {
			GroupID        string  `json:"security_group_id"`
			Direction      string  `json:"direction"`
			EtherType      string  `json:"ethertype"`
			Protocol       *string `json:"protocol"`
			PortRangeMin   *int    `json:"port_range_min"`
			PortRangeMax   *int    `json:"port_range_max"`
			RemoteIPPrefix *string `json:"remote_ip_prefix"`
			RemoteGroupID  *string `json:"remote_group_id"`
			Description    string  `json:"description"`
			ProjectID      string  `json:"project_id"`
			TenantID       string  `json:"tenant_id"`
		} `json:"security_group_rule"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	rb := b.Rule
	if rb == nil {
		return 0, nil, badRequest("Resource body required")
	}
	if rb.Direction != "ingress" && rb.Direction != "egress" {
		return 0, nil, badRequest("Invalid input for direction. Reason: %s is not in valid_values.", rb.Direction)
	}
	if rb.EtherType == "" {
		rb.EtherType = "IPv4"
	}
	if rb.EtherType != "IPv4" && rb.EtherType != "IPv6" {
		return 0, nil, badRequest("Invalid input for ethertype. Reason: %s is not in valid_values.", rb.EtherType)
	}
	if rb.Protocol != nil && *rb.Protocol != "" {
		p := strings.ToLower(*rb.Protocol)
		if _, ok := protocolNumbers[p]; !ok {
			if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 255 {
				return 0, nil, badRequest("Security group rule protocol %s not supported. Only protocol values [None, ah, dccp, egp, esp, gre, icmp, igmp, ipv6-icmp, sctp, tcp, udp, vrrp] and integer representations [0 to 255] are supported.", *rb.Protocol)
			}
		}
		rb.Protocol = &p
	} else {
		rb.Protocol = nil
	}
	if rb.PortRangeMin != nil && rb.PortRangeMax != nil && *rb.PortRangeMin > *rb.PortRangeMax {
		return 0, nil, badRequest("For TCP/UDP protocols, port_range_min must be <= port_range_max")
	}
	if (rb.PortRangeMin != nil || rb.PortRangeMax != nil) && rb.Protocol == nil {
		return 0, nil, badRequest("Must also specify protocol if port range is given.")
	}
	if rb.RemoteIPPrefix != nil && *rb.RemoteIPPrefix != "" {
		p, err := netip.ParsePrefix(*rb.RemoteIPPrefix)
		if err != nil {
			a, aerr := netip.ParseAddr(*rb.RemoteIPPrefix)
			if aerr != nil {
				return 0, nil, badRequest("Invalid input for remote_ip_prefix. Reason: '%s' is not a valid IP subnet.", *rb.RemoteIPPrefix)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if (p.Addr().Is4()) != (rb.EtherType == "IPv4") {
			return 0, nil, badRequest("Conflicting value ethertype %s for CIDR %s", rb.EtherType, *rb.RemoteIPPrefix)
		}
		norm := p.Masked().String()
		rb.RemoteIPPrefix = &norm
	} else {
		rb.RemoteIPPrefix = nil
	}
	if rb.RemoteGroupID != nil && *rb.RemoteGroupID == "" {
		rb.RemoteGroupID = nil
	}
	if rb.RemoteIPPrefix != nil && rb.RemoteGroupID != nil {
		return 0, nil, badRequest("Only remote_ip_prefix or remote_group_id may be provided.")
	}
	if err := s.sleep(c.r.Context(), time.Duration(s.knob().SecurityGroupUpdateLatency)); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.getSecGroupLocked(c, rb.GroupID)
	if err != nil {
		return 0, nil, err
	}
	if rb.RemoteGroupID != nil {
		if _, err := s.getSecGroupLocked(c, *rb.RemoteGroupID); err != nil {
			return 0, nil, err
		}
	}
	owner, err := c.ownerFor(rb.ProjectID, rb.TenantID)
	if err != nil {
		return 0, nil, err
	}
	eq := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	eqi := func(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	for _, rid := range g.Rules {
		r := s.st.sgRules.m[rid]
		if r != nil && r.Direction == rb.Direction && r.EtherType == rb.EtherType && eq(r.Protocol, rb.Protocol) &&
			eqi(r.PortRangeMin, rb.PortRangeMin) && eqi(r.PortRangeMax, rb.PortRangeMax) &&
			eq(r.RemoteIPPrefix, rb.RemoteIPPrefix) && eq(r.RemoteGroupID, rb.RemoteGroupID) {
			return 0, nil, errf(http.StatusConflict, "SecurityGroupRuleExists", "Security group rule already exists. Rule id is %s.", r.ID)
		}
	}
	if err := s.checkQuotaLocked(owner, "security_group_rule"); err != nil {
		return 0, nil, err
	}
	now := s.now()
	r := &sgRule{ID: s.newUUID(), Project: owner, GroupID: g.ID, Direction: rb.Direction, EtherType: rb.EtherType,
		Protocol: rb.Protocol, PortRangeMin: rb.PortRangeMin, PortRangeMax: rb.PortRangeMax,
		RemoteIPPrefix: rb.RemoteIPPrefix, RemoteGroupID: rb.RemoteGroupID, Description: rb.Description,
		Revision: 0, Created: now, Updated: now}
	s.st.sgRules.put(r)
	g.Rules = append(g.Rules, r.ID)
	g.Revision++
	g.Updated = now
	return http.StatusCreated, map[string]any{"security_group_rule": viewRule(r)}, nil
}

func (s *neutron) deleteRule(c *call) (int, any, error) {
	if err := s.sleep(c.r.Context(), time.Duration(s.knob().SecurityGroupUpdateLatency)); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.st.sgRules.get(c.r.PathValue("id"))
	if !ok || !c.visible(r.Project) {
		return 0, nil, errf(http.StatusNotFound, "SecurityGroupRuleNotFound", "Security group rule %s does not exist", c.r.PathValue("id"))
	}
	if g, ok := s.st.secGroups.get(r.GroupID); ok {
		g.Rules = slices.DeleteFunc(g.Rules, func(id string) bool { return id == r.ID })
		g.Revision++
		g.Updated = s.now()
	}
	s.st.sgRules.del(r.ID)
	return http.StatusNoContent, nil, nil
}

// Quotas.

func (s *cloud) quotaLocked(project string) quota {
	if q := s.st.quotas[project]; q != nil {
		return *q
	}
	return defaultQuota()
}

func (s *cloud) usageLocked(project string) map[string]int {
	return map[string]int{
		"network": len(s.st.networks.ids(project)), "subnet": len(s.st.subnets.ids(project)),
		"port": len(s.st.ports.ids(project)), "router": len(s.st.routers.ids(project)),
		"security_group": len(s.st.secGroups.ids(project)), "security_group_rule": len(s.st.sgRules.ids(project)),
		"floatingip": 0,
	}
}

func quotaMap(q quota) map[string]int {
	return map[string]int{"network": q.Network, "subnet": q.Subnet, "port": q.Port, "router": q.Router,
		"security_group": q.SecurityGroup, "security_group_rule": q.SecurityGroupRule, "floatingip": q.FloatingIP}
}

func (s *cloud) checkQuotaLocked(project, resource string) error {
	limit := quotaMap(s.quotaLocked(project))[resource]
	if limit >= 0 && s.usageLocked(project)[resource] >= limit {
		return errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['%s'].", resource)
	}
	return nil
}

func (s *neutron) quotaProject(c *call) (string, error) {
	p := c.r.PathValue("project")
	if p != c.project() && !c.admin() {
		return "", errf(http.StatusForbidden, "HTTPForbidden", "Non-admin is not authorized to access quotas for another project")
	}
	return p, nil
}

func (s *neutron) listQuotas(c *call) (int, any, error) {
	if !c.admin() {
		return 0, nil, errf(http.StatusForbidden, "HTTPForbidden", "rule:get_quota is disallowed by policy")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []any{}
	for _, pid := range s.id.projectIDs() {
		if q := s.st.quotas[pid]; q != nil {
			m := map[string]any{"project_id": pid, "tenant_id": pid}
			for k, v := range quotaMap(*q) {
				m[k] = v
			}
			out = append(out, m)
		}
	}
	return http.StatusOK, map[string]any{"quotas": out}, nil
}

func (s *neutron) getQuota(c *call) (int, any, error) {
	p, err := s.quotaProject(c)
	if err != nil {
		return 0, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return http.StatusOK, map[string]any{"quota": quotaMap(s.quotaLocked(p))}, nil
}

func (s *neutron) getQuotaDetails(c *call) (int, any, error) {
	if d := c.r.PathValue("details"); d != "details" && d != "details.json" {
		return 0, nil, errf(http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
	}
	p, err := s.quotaProject(c)
	if err != nil {
		return 0, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	used := s.usageLocked(p)
	out := map[string]any{}
	for k, v := range quotaMap(s.quotaLocked(p)) {
		out[k] = map[string]int{"limit": v, "used": used[k], "reserved": 0}
	}
	return http.StatusOK, map[string]any{"quota": out}, nil
}

func (s *neutron) updateQuota(c *call) (int, any, error) {
	if !c.admin() {
		return 0, nil, errf(http.StatusForbidden, "HTTPForbidden", "rule:update_quota is disallowed by policy")
	}
	var b struct {
		Quota map[string]int `json:"quota"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := c.r.PathValue("project")
	q := s.quotaLocked(p)
	for k, v := range b.Quota {
		if v < -1 {
			return 0, nil, badRequest("Invalid input for %s. Reason: '%d' should be greater than or equal to -1.", k, v)
		}
		switch k {
		case "network":
			q.Network = v
		case "subnet":
			q.Subnet = v
		case "port":
			q.Port = v
		case "router":
			q.Router = v
		case "security_group":
			q.SecurityGroup = v
		case "security_group_rule":
			q.SecurityGroupRule = v
		case "floatingip":
			q.FloatingIP = v
		default:
			return 0, nil, badRequest("Unrecognized attribute(s) '%s'", k)
		}
	}
	s.st.quotas[p] = &q
	return http.StatusOK, map[string]any{"quota": quotaMap(q)}, nil
}

func (s *neutron) deleteQuota(c *call) (int, any, error) {
	if !c.admin() {
		return 0, nil, errf(http.StatusForbidden, "HTTPForbidden", "rule:delete_quota is disallowed by policy")
	}
	s.mu.Lock()
	delete(s.st.quotas, c.r.PathValue("project"))
	s.mu.Unlock()
	return http.StatusNoContent, nil, nil
}

// selectFields keeps only the named fields of each view, as Neutron's fields= parameter does.
func selectFields(views []any, fields []string) ([]any, error) {
	keep := map[string]bool{}
	for _, f := range splitComma(fields) {
		keep[f] = true
	}
	out := make([]any, 0, len(views))
	for _, v := range views {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		for k := range m {
			if !keep[k] {
				delete(m, k)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

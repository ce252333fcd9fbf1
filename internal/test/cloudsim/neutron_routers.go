package cloudsim

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
)

type routerView struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	TenantID     string   `json:"tenant_id"`
	ProjectID    string   `json:"project_id"`
	Status       string   `json:"status"`
	AdminStateUp bool     `json:"admin_state_up"`
	GatewayInfo  any      `json:"external_gateway_info"`
	Routes       []route  `json:"routes"`
	Distributed  bool     `json:"distributed"`
	HA           bool     `json:"ha"`
	AZHints      []string `json:"availability_zone_hints"`
	AZs          []string `json:"availability_zones"`
	Tags         []string `json:"tags"`
	Revision     int      `json:"revision_number"`
	Created      string   `json:"created_at"`
	Updated      string   `json:"updated_at"`
}

func viewRouter(r *router) any {
	var gw any
	if r.GatewayNet != "" {
		gw = map[string]any{"network_id": r.GatewayNet, "enable_snat": true, "external_fixed_ips": []any{}}
	}
	return &routerView{ID: r.ID, Name: r.Name, Description: r.Description, TenantID: r.Project, ProjectID: r.Project,
		Status: r.Status, AdminStateUp: true, GatewayInfo: gw, Routes: orEmpty(r.Routes), AZHints: []string{},
		AZs: []string{"nova"}, Tags: orEmpty(r.Tags), Revision: r.Revision,
		Created: neutronTime(r.Created), Updated: neutronTime(r.Updated)}
}

func routerField(r *router, k string) ([]string, bool) {
	switch k {
	case "status":
		return []string{r.Status}, true
	case "description":
		return []string{r.Description}, true
	}
	return commonField(k, r.ID, r.Name, r.Project, r.Tags, r.Revision)
}

func (s *neutron) listRouters(c *call) (int, any, error) {
	return neutronList(c, s.st.routers, "routers", routerField, viewRouter)
}

func (s *cloud) getRouterLocked(c *call, id string) (*router, error) {
	r, ok := s.st.routers.get(id)
	if !ok || !c.visible(r.Project) {
		return nil, errf(http.StatusNotFound, "RouterNotFound", "Router %s could not be found", id)
	}
	return r, nil
}

func (s *neutron) getRouter(c *call) (int, any, error) {
	return show(s.cloud, c, s.routers(), c.r.PathValue("id"))
}

type routerBody struct {
	Router *routerFields `json:"router"`
}

type routerFields struct {
	Name        *string  `json:"name"`
	Description *string  `json:"description"`
	ProjectID   string   `json:"project_id"`
	TenantID    string   `json:"tenant_id"`
	Routes      *[]route `json:"routes"`
	GatewayInfo *struct {
		NetworkID string `json:"network_id"`
	} `json:"external_gateway_info"`
	Tags []string `json:"tags"`
}

func (s *neutron) createRouter(c *call) (int, any, error) {
	ids := func(b *routerFields) (string, string) { return b.ProjectID, b.TenantID }
	return create(s, c, s.routers(), ids, func(owner string, b *routerFields) (*router, error) {
		if b.Routes != nil {
			return nil, badRequest("Attribute 'routes' not allowed in POST")
		}
		if err := s.checkQuotaLocked(owner, "router"); err != nil {
			return nil, err
		}
		r := s.newRouterLocked(owner)
		if b.Name != nil {
			r.Name = *b.Name
		}
		if b.Description != nil {
			r.Description = *b.Description
		}
		if b.GatewayInfo != nil && b.GatewayInfo.NetworkID != "" {
			n, ok := s.st.networks.get(b.GatewayInfo.NetworkID)
			if !ok || !n.External {
				return nil, badRequest("Bad router request: Network %s is not an external network.", b.GatewayInfo.NetworkID)
			}
			r.GatewayNet = n.ID
		}
		r.Tags = b.Tags
		s.st.routers.put(r)
		return r, nil
	})
}

func (s *cloud) newRouterLocked(owner string) *router {
	now := s.now()
	return &router{ID: s.newUUID(), Project: owner, Status: "ACTIVE", Revision: 1, Created: now, Updated: now}
}

// validateRoutesLocked checks a router's whole new route list the way Neutron does.
func (s *cloud) validateRoutesLocked(r *router, routes []route) error {
	seen := map[route]bool{}
	for _, rt := range routes {
		if _, err := netip.ParsePrefix(rt.Destination); err != nil {
			return errf(http.StatusBadRequest, "HTTPBadRequest",
				"Invalid input for routes. Reason: '%s' is not a valid IP subnet.", rt.Destination)
		}
		if _, err := netip.ParseAddr(rt.NextHop); err != nil {
			return errf(http.StatusBadRequest, "HTTPBadRequest",
				"Invalid input for routes. Reason: '%s' is not a valid IP address.", rt.NextHop)
		}
		if seen[rt] {
			return errf(http.StatusBadRequest, "HTTPBadRequest",
				"Invalid input for routes. Reason: Duplicate hostroute '%s'.", fmt.Sprintf("{'destination': '%s', 'nexthop': '%s'}", rt.Destination, rt.NextHop))
		}
		seen[rt] = true
	}
	if max := s.knob().MaxRoutes; max > 0 && len(routes) > max {
		return errf(http.StatusBadRequest, "RoutesExhausted",
			"Unable to complete operation for %s. The number of routes exceeds the maximum %d.", r.ID, max)
	}
	if s.knob().AllowUnconnectedNexthop {
		return nil
	}
	for _, rt := range routes {
		nh, _ := netip.ParseAddr(rt.NextHop)
		connected, own := false, false
		for _, sid := range r.Subnets {
			sub, ok := s.st.subnets.get(sid)
			if !ok {
				continue
			}
			if p, err := netip.ParsePrefix(sub.CIDR); err == nil && p.Contains(nh) {
				connected = true
			}
			if sub.GatewayIP == rt.NextHop {
				own = true
			}
		}
		if !connected {
			return errf(http.StatusBadRequest, "InvalidRoutes",
				"Invalid format for routes: %s, the nexthop is not connected with router", formatRoute(rt))
		}
		if own {
			return errf(http.StatusBadRequest, "InvalidRoutes",
				"Invalid format for routes: %s, the nexthop is used by router", formatRoute(rt))
		}
	}
	return nil
}

func formatRoute(rt route) string {
	return fmt.Sprintf("[{'destination': '%s', 'nexthop': '%s'}]", rt.Destination, rt.NextHop)
}

func (s *neutron) updateRouter(c *call) (int, any, error) {
	return update(s, c, s.routers(), nil, func(r *router, b *routerFields) error {
		if b.ProjectID != "" || b.TenantID != "" {
			return badRequest("Cannot update read-only attribute project_id")
		}
		if b.Routes != nil {
			routes := *b.Routes
			if err := s.validateRoutesLocked(r, routes); err != nil {
				return err
			}
			r.Routes = slices.Clone(routes)
		}
		if b.Name != nil {
			r.Name = *b.Name
		}
		if b.Description != nil {
			r.Description = *b.Description
		}
		if b.Tags != nil {
			r.Tags = b.Tags
		}
		if b.GatewayInfo != nil {
			if b.GatewayInfo.NetworkID == "" {
				r.GatewayNet = ""
			} else if n, ok := s.st.networks.get(b.GatewayInfo.NetworkID); ok && n.External {
				r.GatewayNet = n.ID
			} else {
				return badRequest("Bad router request: Network %s is not an external network.", b.GatewayInfo.NetworkID)
			}
		}
		return nil
	})
}

func (s *neutron) extraRoutes(c *call, add bool) (int, any, error) {
	var b routerBody
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if b.Router == nil || b.Router.Routes == nil {
		return 0, nil, badRequest("Bad routes request: Body contains no 'routes' in 'router'")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getRouterLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	in := *b.Router.Routes
	for _, rt := range in {
		if _, err := netip.ParsePrefix(rt.Destination); err != nil {
			return 0, nil, badRequest("Invalid input for routes. Reason: '%s' is not a valid IP subnet.", rt.Destination)
		}
		if _, err := netip.ParseAddr(rt.NextHop); err != nil {
			return 0, nil, badRequest("Invalid input for routes. Reason: '%s' is not a valid IP address.", rt.NextHop)
		}
	}
	var next []route
	if add {
		next = slices.Clone(r.Routes)
		for _, rt := range in {
			if !slices.Contains(next, rt) {
				next = append(next, rt)
			}
		}
		if err := s.validateRoutesLocked(r, next); err != nil {
			return 0, nil, err
		}
	} else {
		for _, rt := range r.Routes {
			if !slices.Contains(in, rt) {
				next = append(next, rt)
			}
		}
	}
	r.Routes = next
	r.Revision++
	r.Updated = s.now()
	return http.StatusOK, map[string]any{"router": viewRouter(r)}, nil
}

func (s *neutron) addExtraRoutes(c *call) (int, any, error)    { return s.extraRoutes(c, true) }
func (s *neutron) removeExtraRoutes(c *call) (int, any, error) { return s.extraRoutes(c, false) }

func (s *neutron) deleteRouter(c *call) (int, any, error) {
	return remove(s, c, s.routers(), func(r *router) error {
		if len(r.Subnets) > 0 {
			return errf(http.StatusConflict, "RouterInUse", "Router %s still has ports", r.ID)
		}
		s.st.routers.del(r.ID)
		return nil
	})
}

type interfaceBody struct {
	SubnetID string `json:"subnet_id"`
	PortID   string `json:"port_id"`
}

func (s *neutron) addRouterInterface(c *call) (int, any, error) {
	var b interfaceBody
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if (b.SubnetID == "") == (b.PortID == "") {
		return 0, nil, badRequest("Bad router request: Either subnet_id or port_id must be specified.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getRouterLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	p, sub, err := s.attachLocked(c, r, b.SubnetID, b.PortID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"id": r.ID, "subnet_id": sub.ID, "subnet_ids": []string{sub.ID},
		"port_id": p.ID, "network_id": sub.NetworkID, "tenant_id": r.Project, "project_id": r.Project}, nil
}

// attachLocked connects a subnet to a router through a new port with the subnet's gateway IP,
// or through an existing port. c may be nil when seeding.
func (s *cloud) attachLocked(c *call, r *router, subnetID, portID string) (*port, *subnet, error) {
	var p *port
	var sub *subnet
	if portID != "" {
		pp, ok := s.st.ports.get(portID)
		if !ok || (c != nil && !c.visible(pp.Project)) {
			return nil, nil, errf(http.StatusNotFound, "PortNotFound", "Port %s could not be found.", portID)
		}
		if pp.DeviceID != "" {
			return nil, nil, errf(http.StatusConflict, "PortInUse", "Unable to complete operation on port %s for network %s. Port already has an attached device %s.", pp.ID, pp.NetworkID, pp.DeviceID)
		}
		if len(pp.FixedIPs) == 0 {
			return nil, nil, badRequest("Bad router request: Router port must have at least one fixed IP.")
		}
		sub, _ = s.st.subnets.get(pp.FixedIPs[0].SubnetID)
		p = pp
	} else {
		ss, ok := s.st.subnets.get(subnetID)
		if !ok || (c != nil && !c.visible(ss.Project)) {
			return nil, nil, errf(http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", subnetID)
		}
		sub = ss
	}
	if sub == nil {
		return nil, nil, badRequest("Bad router request: port has no subnet")
	}
	if slices.Contains(r.Subnets, sub.ID) {
		return nil, nil, badRequest("Bad router request: Router already has a port on subnet %s.", sub.ID)
	}
	if sub.GatewayIP == "" && p == nil {
		return nil, nil, badRequest("Bad router request: Subnet %s does not have a gateway IP.", sub.ID)
	}
	if p == nil {
		n, _ := s.st.networks.get(sub.NetworkID)
		now := s.now()
		p = &port{ID: s.newUUID(), Project: r.Project, NetworkID: n.ID, DeviceID: r.ID,
			DeviceOwner: "network:router_interface", Status: "ACTIVE", MAC: s.newMAC(), Revision: 1,
			FixedIPs: []fixedIP{{SubnetID: sub.ID, IPAddress: sub.GatewayIP}}, Created: now, Updated: now}
		idx := s.ipIndex[sub.ID]
		if idx == nil {
			idx = map[string]string{}
			s.ipIndex[sub.ID] = idx
		}
		idx[sub.GatewayIP] = p.ID
		s.st.ports.put(p)
	} else {
		p.DeviceID, p.DeviceOwner, p.Status = r.ID, "network:router_interface", "ACTIVE"
		p.Revision++
	}
	r.Subnets = append(r.Subnets, sub.ID)
	r.Revision++
	r.Updated = s.now()
	return p, sub, nil
}

func (s *neutron) removeRouterInterface(c *call) (int, any, error) {
	var b interfaceBody
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if b.SubnetID == "" && b.PortID == "" {
		return 0, nil, badRequest("Bad router request: Either subnet_id or port_id must be specified.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getRouterLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	var p *port
	for _, id := range s.st.ports.ids(r.Project) {
		pp := s.st.ports.m[id]
		if pp.DeviceID != r.ID || pp.DeviceOwner != "network:router_interface" {
			continue
		}
		if pp.ID == b.PortID || (len(pp.FixedIPs) > 0 && pp.FixedIPs[0].SubnetID == b.SubnetID) {
			p = pp
			break
		}
	}
	if p == nil {
		if b.PortID != "" {
			return 0, nil, errf(http.StatusNotFound, "RouterInterfaceNotFound", "Router %s does not have an interface with id %s", r.ID, b.PortID)
		}
		return 0, nil, errf(http.StatusNotFound, "RouterInterfaceNotFoundForSubnet", "Router %s has no interface on subnet %s", r.ID, b.SubnetID)
	}
	sid := p.FixedIPs[0].SubnetID
	if sub, ok := s.st.subnets.get(sid); ok {
		if pfx, err := netip.ParsePrefix(sub.CIDR); err == nil {
			for _, rt := range r.Routes {
				if nh, err := netip.ParseAddr(rt.NextHop); err == nil && pfx.Contains(nh) {
					return 0, nil, errf(http.StatusConflict, "RouterInterfaceInUseByRoute",
						"Router interface for subnet %s on router %s cannot be deleted, as it is required by one or more routes.", sid, r.ID)
				}
			}
		}
	}
	s.releaseIPsLocked(p)
	s.st.ports.del(p.ID)
	r.Subnets = slices.DeleteFunc(r.Subnets, func(id string) bool { return id == sid })
	r.Revision++
	r.Updated = s.now()
	return http.StatusOK, map[string]any{"id": r.ID, "subnet_id": sid, "subnet_ids": []string{sid},
		"port_id": p.ID, "network_id": p.NetworkID, "tenant_id": r.Project, "project_id": r.Project}, nil
}

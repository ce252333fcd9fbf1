package cloudsim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *octavia) routes(mux *http.ServeMux, api apiFunc) {
	mux.Handle("GET /load-balancer/{$}", api(svcLB, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"versions": []any{map[string]any{"id": "v2.0", "status": "CURRENT",
			"updated": "2023-02-01T00:00:00Z",
			"links":   []any{map[string]string{"rel": "self", "href": c.baseURL() + "/load-balancer/v2/"}}}}}, nil
	}))
	h := func(pattern string, fn handlerFunc) {
		mux.Handle(pattern, api(svcLB, true, func(c *call) (int, any, error) {
			if v := c.r.PathValue("ver"); v != "v2" && v != "v2.0" {
				return 0, nil, errf(http.StatusNotFound, "NotFound", "The resource could not be found.")
			}
			return fn(c)
		}))
	}
	h("GET /load-balancer/{ver}/lbaas/loadbalancers", s.listLBs)
	h("POST /load-balancer/{ver}/lbaas/loadbalancers", s.createLB)
	h("GET /load-balancer/{ver}/lbaas/loadbalancers/{id}", s.getLB)
	h("DELETE /load-balancer/{ver}/lbaas/loadbalancers/{id}", s.deleteLB)
	h("POST /load-balancer/{ver}/lbaas/listeners", s.createListener)
	h("GET /load-balancer/{ver}/lbaas/listeners/{id}", s.getListener)
	h("DELETE /load-balancer/{ver}/lbaas/listeners/{id}", s.deleteListener)
	h("GET /load-balancer/{ver}/quotas/{project}", s.getLBQuota)
	h("GET /load-balancer/{ver}/lbaas/quotas/{project}", s.getLBQuota)
	mux.Handle("/load-balancer/", api(svcLB, false, notFound))
}

type lbView struct {
	ID                 string           `json:"id"`
	Name               string           `json:"name"`
	Description        string           `json:"description"`
	ProjectID          string           `json:"project_id"`
	TenantID           string           `json:"tenant_id"`
	ProvisioningStatus string           `json:"provisioning_status"`
	OperatingStatus    string           `json:"operating_status"`
	AdminStateUp       bool             `json:"admin_state_up"`
	VIPAddress         string           `json:"vip_address"`
	VIPPortID          string           `json:"vip_port_id"`
	VIPSubnetID        string           `json:"vip_subnet_id"`
	VIPNetworkID       string           `json:"vip_network_id"`
	Provider           string           `json:"provider"`
	FlavorID           *string          `json:"flavor_id"`
	Listeners          []map[string]any `json:"listeners"`
	Pools              []map[string]any `json:"pools"`
	Tags               []string         `json:"tags"`
	AZ                 *string          `json:"availability_zone"`
	Created            string           `json:"created_at"`
	Updated            *string          `json:"updated_at"`
}

func viewLB(v *loadBalancer) any {
	view := &lbView{ID: v.ID, Name: v.Name, Description: v.Description, ProjectID: v.Project, TenantID: v.Project,
		ProvisioningStatus: v.ProvisioningStatus, OperatingStatus: v.OperatingStatus, AdminStateUp: true,
		VIPAddress: v.VIPAddress, VIPPortID: v.VIPPortID, VIPSubnetID: v.VIPSubnetID, VIPNetworkID: v.VIPNetworkID,
		Provider: "amphora", Listeners: []map[string]any{}, Pools: []map[string]any{}, Tags: orEmpty(v.Tags),
		Created: secNoZ(v.Created)}
	for _, l := range v.Listeners {
		view.Listeners = append(view.Listeners, map[string]any{"id": l.ID})
	}
	for _, p := range v.Pools {
		view.Pools = append(view.Pools, map[string]any{"id": p})
	}
	if !v.Updated.Equal(v.Created) {
		u := secNoZ(v.Updated)
		view.Updated = &u
	}
	return view
}

func lbField(v *loadBalancer, k string) ([]string, bool) {
	switch k {
	case "provisioning_status":
		return []string{v.ProvisioningStatus}, true
	case "operating_status":
		return []string{v.OperatingStatus}, true
	case "vip_address":
		return []string{v.VIPAddress}, true
	case "vip_subnet_id":
		return []string{v.VIPSubnetID}, true
	case "vip_network_id":
		return []string{v.VIPNetworkID}, true
	case "vip_port_id":
		return []string{v.VIPPortID}, true
	case "description":
		return []string{v.Description}, true
	}
	return commonField(k, v.ID, v.Name, v.Project, v.Tags, 0)
}

func (s *octavia) listLBs(c *call) (int, any, error) {
	limit, err := c.limit(0)
	if err != nil {
		return 0, nil, err
	}
	if n := c.query("limit"); n != "" {
		if v, _ := strconv.Atoi(n); v == 0 {
			return 0, nil, errf(http.StatusBadRequest, "InvalidLimit", "Supplied pagination limit of 0 is not valid.")
		}
	}
	q := c.values()
	return index(s.cloud, c, s.st.lbs, "loadbalancers", c.neutronScope(), limit, func(v *loadBalancer) bool {
		return c.visible(v.Project) && matchFilters(q, func(k string) ([]string, bool) { return lbField(v, k) })
	}, plain(viewLB))
}

func (s *cloud) getLBLocked(c *call, id string) (*loadBalancer, error) {
	v, ok := s.st.lbs.get(id)
	if !ok || !c.visible(v.Project) {
		return nil, errf(http.StatusNotFound, "NotFound", "Load Balancer %s not found.", id)
	}
	return v, nil
}

func (s *octavia) loadBalancers() resource[*loadBalancer] {
	return resource[*loadBalancer]{key: "loadbalancer", find: s.getLBLocked, view: plain(viewLB)}
}

func (s *octavia) getLB(c *call) (int, any, error) {
	return show(s.cloud, c, s.loadBalancers(), c.r.PathValue("id"))
}

func (s *octavia) createLB(c *call) (int, any, error) {
	var b struct {
		LB *struct {
			Name         string   `json:"name"`
			Description  string   `json:"description"`
			VIPSubnetID  string   `json:"vip_subnet_id"`
			VIPNetworkID string   `json:"vip_network_id"`
			VIPPortID    string   `json:"vip_port_id"`
			VIPAddress   string   `json:"vip_address"`
			ProjectID    string   `json:"project_id"`
			Tags         []string `json:"tags"`
		} `json:"loadbalancer"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	lb := b.LB
	if lb == nil {
		return 0, nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for field/attribute loadbalancer. Value: 'None'. Mandatory field missing.")
	}
	if lb.VIPSubnetID == "" && lb.VIPNetworkID == "" && lb.VIPPortID == "" {
		return 0, nil, errf(http.StatusBadRequest, "ValidationException", "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, err := c.ownerFor(lb.ProjectID, "")
	if err != nil {
		return 0, nil, err
	}
	v, err := s.addLBLocked(c, owner, lbSpec{Name: lb.Name, Description: lb.Description, SubnetID: lb.VIPSubnetID,
		NetworkID: lb.VIPNetworkID, PortID: lb.VIPPortID, Address: lb.VIPAddress, Tags: lb.Tags})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"loadbalancer": viewLB(v)}, nil
}

type lbSpec struct {
	Name, Description, SubnetID, NetworkID, PortID, Address string
	Tags                                                    []string
	Listeners, Pools                                        int
	Active                                                  bool
}

// addLBLocked creates a load balancer with a VIP port; c may be nil when seeding.
func (s *cloud) addLBLocked(c *call, owner string, spec lbSpec) (*loadBalancer, error) {
	var sub *subnet
	var vip *port
	switch {
	case spec.PortID != "":
		p, ok := s.st.ports.get(spec.PortID)
		if !ok || (c != nil && !c.visible(p.Project)) {
			return nil, errf(http.StatusBadRequest, "ValidationException", "Validation failure: Port %s not found.", spec.PortID)
		}
		vip = p
	case spec.SubnetID != "":
		ss, ok := s.st.subnets.get(spec.SubnetID)
		if !ok || (c != nil && !c.visible(ss.Project)) {
			return nil, errf(http.StatusBadRequest, "ValidationException", "Validation failure: Subnet %s not found.", spec.SubnetID)
		}
		sub = ss
	default:
		n, ok := s.st.networks.get(spec.NetworkID)
		if !ok || (c != nil && !c.visible(n.Project)) || len(n.Subnets) == 0 {
			return nil, errf(http.StatusBadRequest, "ValidationException", "Validation failure: Network %s not found or has no subnet.", spec.NetworkID)
		}
		sub, _ = s.st.subnets.get(n.Subnets[0])
	}
	now := s.now()
	v := &loadBalancer{ID: s.newUUID(), Name: spec.Name, Description: spec.Description, Project: owner,
		ProvisioningStatus: "PENDING_CREATE", OperatingStatus: "OFFLINE", Tags: spec.Tags, Created: now, Updated: now}
	if vip == nil {
		n, _ := s.st.networks.get(sub.NetworkID)
		ps := portSpec{Network: n, Owner: owner, Name: "octavia-lb-" + v.ID, DeviceID: "lb-" + v.ID,
			DeviceOwner: "Octavia", Status: "DOWN", FixedIPs: []fixedIP{{SubnetID: sub.ID, IPAddress: spec.Address}},
			FixedIPsSet: true}
		p, err := s.createPortLocked(nil, ps)
		if err != nil {
			return nil, err
		}
		vip = p
	}
	v.VIPPortID, v.VIPNetworkID = vip.ID, vip.NetworkID
	if len(vip.FixedIPs) > 0 {
		v.VIPAddress, v.VIPSubnetID = vip.FixedIPs[0].IPAddress, vip.FixedIPs[0].SubnetID
	}
	for i := 0; i < spec.Listeners; i++ {
		v.Listeners = append(v.Listeners, lbListener{ID: s.newUUID(), Name: fmt.Sprintf("listener-%d", i), Protocol: "TCP", Port: 443 + i})
	}
	for i := 0; i < spec.Pools; i++ {
		v.Pools = append(v.Pools, s.newUUID())
	}
	s.st.lbs.put(v)
	if spec.Active {
		v.ProvisioningStatus, v.OperatingStatus = "ACTIVE", "ONLINE"
	} else {
		s.later(v, time.Duration(s.knob().LBCreateLatency))
	}
	return v, nil
}

func (s *octavia) deleteLB(c *call) (int, any, error) {
	cascade := false
	if v := c.query("cascade"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return 0, nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for field/attribute cascade. Value: '%s'. Value should be boolean", v)
		}
		cascade = b
	}
	return removeLater(s.cloud, c, s.loadBalancers(), c.r.PathValue("id"), func(v *loadBalancer) (time.Duration, error) {
		if strings.HasPrefix(v.ProvisioningStatus, "PENDING_") {
			return 0, errf(http.StatusConflict, "ImmutableObject", "Invalid state %s of loadbalancer resource %s", v.ProvisioningStatus, v.ID)
		}
		if !cascade && (len(v.Listeners) > 0 || len(v.Pools) > 0) {
			return 0, errf(http.StatusBadRequest, "ValidationException", "Cannot delete Load Balancer %s - it has children", v.ID)
		}
		v.ProvisioningStatus, v.Updated = "PENDING_DELETE", s.now()
		return time.Duration(s.knob().LBDeleteLatency), nil
	})
}

// settleLB finishes a load balancer's change: a delete removes it with its VIP port (and, cascaded, its
// listeners and pools), anything else leaves it ACTIVE and ONLINE.
func (s *cloud) settleLB(v *loadBalancer) {
	if v.ProvisioningStatus == "PENDING_DELETE" {
		if p, ok := s.st.ports.get(v.VIPPortID); ok && p.DeviceOwner == "Octavia" {
			s.releaseIPsLocked(p)
			s.disassociateLocked(p)
			s.st.ports.del(p.ID)
		}
		s.st.lbs.del(v.ID)
		return
	}
	v.ProvisioningStatus, v.OperatingStatus, v.Updated = "ACTIVE", "ONLINE", s.now()
}

func viewListener(v *loadBalancer, l lbListener) any {
	return map[string]any{"id": l.ID, "name": l.Name, "description": "", "protocol": l.Protocol,
		"protocol_port": l.Port, "loadbalancers": []map[string]string{{"id": v.ID}}, "project_id": v.Project,
		"tenant_id": v.Project, "provisioning_status": v.ProvisioningStatus, "operating_status": v.OperatingStatus,
		"admin_state_up": true, "default_pool_id": nil, "connection_limit": -1, "tags": []string{},
		"created_at": secNoZ(v.Created), "updated_at": nil, "l7policies": []any{}, "insert_headers": map[string]any{},
		"allowed_cidrs": nil, "timeout_client_data": 50000, "timeout_member_connect": 5000,
		"timeout_member_data": 50000, "timeout_tcp_inspect": 0}
}

// findListenerLocked finds a listener and its load balancer.
func (s *cloud) findListenerLocked(c *call, id string) (*loadBalancer, int, error) {
	for _, lid := range s.st.lbs.ids(c.neutronScope()) {
		v := s.st.lbs.m[lid]
		if !c.visible(v.Project) {
			continue
		}
		for i, l := range v.Listeners {
			if l.ID == id {
				return v, i, nil
			}
		}
	}
	return nil, 0, errf(http.StatusNotFound, "NotFound", "Listener %s not found.", id)
}

func (s *octavia) createListener(c *call) (int, any, error) {
	var b struct {
		Listener *struct {
			LoadBalancerID string `json:"loadbalancer_id"`
			Protocol       string `json:"protocol"`
			ProtocolPort   int    `json:"protocol_port"`
			Name           string `json:"name"`
		} `json:"listener"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	lb := b.Listener
	if lb == nil || lb.LoadBalancerID == "" || lb.Protocol == "" || lb.ProtocolPort < 1 || lb.ProtocolPort > 65535 {
		return 0, nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for field/attribute listener: loadbalancer_id, protocol and protocol_port (1-65535) are mandatory.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.getLBLocked(c, lb.LoadBalancerID)
	if err != nil {
		return 0, nil, errf(http.StatusBadRequest, "ValidationException", "Validation failure: Load Balancer %s not found.", lb.LoadBalancerID)
	}
	if v.ProvisioningStatus != "ACTIVE" {
		return 0, nil, errf(http.StatusConflict, "ImmutableObject", "Load Balancer %s is immutable and cannot be updated.", v.ID)
	}
	for _, l := range v.Listeners {
		if l.Port == lb.ProtocolPort {
			return 0, nil, errf(http.StatusConflict, "DuplicateListenerEntry", "Another Listener on this Load Balancer is already using protocol_port %d", lb.ProtocolPort)
		}
	}
	l := lbListener{ID: s.newUUID(), Name: lb.Name, Protocol: lb.Protocol, Port: lb.ProtocolPort}
	v.Listeners = append(v.Listeners, l)
	s.lbUpdateLocked(v)
	return http.StatusCreated, map[string]any{"listener": viewListener(v, l)}, nil
}

// lbUpdateLocked puts a load balancer in PENDING_UPDATE until the create latency passes.
func (s *cloud) lbUpdateLocked(v *loadBalancer) {
	v.ProvisioningStatus, v.Updated = "PENDING_UPDATE", s.now()
	s.later(v, time.Duration(s.knob().LBCreateLatency))
}

func (s *octavia) getListener(c *call) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, i, err := s.findListenerLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"listener": viewListener(v, v.Listeners[i])}, nil
}

func (s *octavia) deleteListener(c *call) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, i, err := s.findListenerLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if v.ProvisioningStatus != "ACTIVE" {
		return 0, nil, errf(http.StatusConflict, "ImmutableObject", "Load Balancer %s is immutable and cannot be updated.", v.ID)
	}
	v.Listeners = slices.Delete(v.Listeners, i, i+1)
	s.lbUpdateLocked(v)
	return http.StatusNoContent, nil, nil
}

package cloudsim

import (
	"net/http"
	"strings"
)

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
	return show(s.cloud, c, s.networks(), c.r.PathValue("id"))
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
		for _, f := range s.st.fips.values() {
			if f.NetworkID == n.ID {
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

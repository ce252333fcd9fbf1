package cloudsim

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
	return show(s.cloud, c, s.secGroups(), c.r.PathValue("id"))
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

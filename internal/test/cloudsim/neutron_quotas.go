package cloudsim

import (
	"net/http"
)

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
		"floatingip": len(s.st.fips.ids(project)),
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
		if !q.set(k, v) {
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

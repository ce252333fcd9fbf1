package cloudsim

import (
	"net/http"
)

// Cinder's and Octavia's quotas, read only: the defaults of a fresh deployment (Cinder: 10 volumes,
// 10 snapshots, 1000 GB; Octavia: unlimited), with what the project holds. Neither is enforced;
// Neutron's quotas (neutron_quotas.go) are settable and enforced.

// quotaTarget is the project whose quotas c asks for: its own, or any for an admin (403 otherwise,
// as Cinder and Octavia answer).
// errType names the error in the service's shape (Cinder: forbidden; Octavia: Forbidden).
func quotaTarget(c *call, project, errType string) (string, error) {
	if project != c.project() && !c.admin() {
		return "", errf(http.StatusForbidden, errType, "Policy doesn't allow reading the quotas of project %s.", project)
	}
	return project, nil
}

// getQuotaSet answers GET .../os-quota-sets/{project}[?usage=true] (Cinder).
func (s *cinder) getQuotaSet(c *call, target string) (int, any, error) {
	p, err := quotaTarget(c, target, "forbidden")
	if err != nil {
		return 0, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	vols, snaps, gb := 0, 0, 0
	for _, id := range s.st.volumes.ids(p) {
		if v, ok := s.st.volumes.get(id); ok {
			vols, gb = vols+1, gb+v.Size
		}
	}
	for _, id := range s.st.snapshots.ids(p) {
		if v, ok := s.st.snapshots.get(id); ok {
			snaps, gb = snaps+1, gb+v.Size
		}
	}
	limits := map[string]int{"volumes": 10, "snapshots": 10, "gigabytes": 1000, "backups": 10, "backup_gigabytes": 1000,
		"groups": 10, "per_volume_gigabytes": -1}
	used := map[string]int{"volumes": vols, "snapshots": snaps, "gigabytes": gb}
	out := map[string]any{"id": p}
	usage := c.query("usage") == "true" || c.query("usage") == "True"
	for k, limit := range limits {
		if usage {
			out[k] = map[string]int{"limit": limit, "in_use": used[k], "reserved": 0, "allocated": 0}
		} else {
			out[k] = limit
		}
	}
	return http.StatusOK, map[string]any{"quota_set": out}, nil
}

// getLBQuota answers GET /v2/quotas/{project} and /v2/lbaas/quotas/{project} (Octavia: limits only).
func (s *octavia) getLBQuota(c *call) (int, any, error) {
	if _, err := quotaTarget(c, c.r.PathValue("project"), "Forbidden"); err != nil {
		return 0, nil, err
	}
	q := map[string]int{}
	for _, k := range []string{"load_balancer", "listener", "member", "pool", "health_monitor", "l7policy", "l7rule"} {
		q[k] = -1
	}
	return http.StatusOK, map[string]any{"quota": q}, nil
}

package cloudsim

import (
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Octavia's provisioning and operating statuses.
var (
	lbProvisioning = []string{"ACTIVE", "DELETED", "ERROR", "PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE"}
	lbOperating    = []string{"ONLINE", "OFFLINE", "DEGRADED", "ERROR", "DRAINING", "NO_MONITOR"}
)

// SetLoadBalancerStatus puts a load balancer in a state only an administrator (or a dead octavia-worker)
// leaves it in on a real Octavia: provisioning ERROR or a PENDING_* that never ends, operating ERROR or
// DEGRADED. Any change in flight is dropped, so that the state stays until set again. An empty status keeps
// the current one.
func (s *Sim) SetLoadBalancerStatus(id, provisioning, operating string) error {
	if provisioning != "" && !slices.Contains(lbProvisioning, provisioning) {
		return fmt.Errorf("set load balancer status: provisioning status %q is none of %v", provisioning, lbProvisioning)
	}
	if operating != "" && !slices.Contains(lbOperating, operating) {
		return fmt.Errorf("set load balancer status: operating status %q is none of %v", operating, lbOperating)
	}
	s.advance()
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.st.lbs.get(id)
	if !ok {
		return fmt.Errorf("set load balancer status: no load balancer %s", id)
	}
	if provisioning != "" {
		v.ProvisioningStatus = provisioning
	}
	if operating != "" {
		v.OperatingStatus = operating
	}
	*v.due() = time.Time{}
	v.Updated = s.now()
	return nil
}

// lbStatusRoute is the admin call of SetLoadBalancerStatus: PUT /_sim/loadbalancers/{id}/status with
// {"provisioning_status": ..., "operating_status": ...}.
func (s *Sim) lbStatusRoute(c *call) (int, any, error) {
	var b struct {
		Provisioning string `json:"provisioning_status"`
		Operating    string `json:"operating_status"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if err := s.SetLoadBalancerStatus(c.r.PathValue("id"), b.Provisioning, b.Operating); err != nil {
		return 0, nil, badRequest("%v", err)
	}
	return http.StatusNoContent, nil, nil
}

package cloudsim

import (
	"fmt"
	"net/http"
	"time"
)

// CrashServer shows what a compute host's crash leaves of an ACTIVE server on a real Nova once its host is back:
// SHUTOFF, with a "stop" in its instance-action log that no user asked for (Nova's power-state sync stops a server
// it finds powered off, in an admin context of no user). A server a user stopped has the user's stop instead.
func (s *Sim) CrashServer(id string) error {
	s.advance()
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.st.servers.get(id)
	if !ok {
		return fmt.Errorf("crash server: no server %s", id)
	}
	if v.VMState != "active" {
		return fmt.Errorf("crash server %s: vm_state %s, want active", id, v.VMState)
	}
	now := s.now()
	v.Status, v.VMState, v.TaskState, v.Updated = "SHUTOFF", "stopped", "", now
	*v.due() = time.Time{}
	v.act("stop", "req-"+s.newUUID(), "", "", now)
	return nil
}

// crashRoute is the admin call of CrashServer: POST /_sim/servers/{id}/crash.
func (s *Sim) crashRoute(c *call) (int, any, error) {
	if err := s.CrashServer(c.r.PathValue("id")); err != nil {
		return 0, nil, badRequest("%v", err)
	}
	return http.StatusNoContent, nil, nil
}

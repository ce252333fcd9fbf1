package cloudsim

import (
	"net/http"
)

// adminRoutes serve the simulator's own API under /_sim/: knobs, faults, seeding, save, stats.
// It has no authentication: the simulator is a test double on loopback.
func (s *Sim) adminRoutes(mux *http.ServeMux) {
	h := func(pattern string, fn handlerFunc) { mux.Handle(pattern, s.adminAPI(fn)) }
	h("GET /_sim/knobs", func(c *call) (int, any, error) { return http.StatusOK, s.Knobs(), nil })
	setKnobs := func(c *call) (int, any, error) {
		// Decode over the current knobs: fields left out keep their values.
		k := s.Knobs()
		if err := c.decode(&k); err != nil {
			return 0, nil, err
		}
		if err := s.SetKnobs(k); err != nil {
			return 0, nil, badRequest("%v", err)
		}
		s.log.Info("knobs changed", "knobs", k)
		return http.StatusOK, k, nil
	}
	h("PUT /_sim/knobs", setKnobs)
	h("POST /_sim/knobs", setKnobs)
	h("PATCH /_sim/knobs", setKnobs)
	h("GET /_sim/faults", func(c *call) (int, any, error) { return http.StatusOK, map[string]any{"faults": s.Faults()}, nil })
	h("POST /_sim/faults", func(c *call) (int, any, error) {
		var f Fault
		if err := c.decode(&f); err != nil {
			return 0, nil, err
		}
		id, err := s.AddFault(f)
		if err != nil {
			return 0, nil, badRequest("%v", err)
		}
		return http.StatusCreated, map[string]string{"id": id}, nil
	})
	h("DELETE /_sim/faults", func(c *call) (int, any, error) { s.ClearFaults(); return http.StatusNoContent, nil, nil })
	h("DELETE /_sim/faults/{id}", func(c *call) (int, any, error) {
		if !s.RemoveFault(c.r.PathValue("id")) {
			return 0, nil, errf(http.StatusNotFound, "NotFound", "no fault %s", c.r.PathValue("id"))
		}
		return http.StatusNoContent, nil, nil
	})
	h("POST /_sim/seed", func(c *call) (int, any, error) {
		var spec SeedSpec
		if err := c.decode(&spec); err != nil {
			return 0, nil, err
		}
		out, err := s.Seed(spec)
		if err != nil {
			return 0, nil, badRequest("%v", err)
		}
		return http.StatusCreated, out, nil
	})
	h("POST /_sim/clusters", func(c *call) (int, any, error) {
		var spec ClusterSeed
		if err := c.decode(&spec); err != nil {
			return 0, nil, err
		}
		out, err := s.SeedCluster(spec)
		if err != nil {
			return 0, nil, badRequest("%v", err)
		}
		return http.StatusCreated, out, nil
	})
	h("POST /_sim/save", func(c *call) (int, any, error) {
		if err := s.Save(); err != nil {
			return 0, nil, badRequest("%v", err)
		}
		return http.StatusNoContent, nil, nil
	})
	h("PUT /_sim/loadbalancers/{id}/status", s.lbStatusRoute)
	h("POST /_sim/servers/{id}/crash", s.crashRoute)
	h("POST /_sim/revoke-tokens", func(c *call) (int, any, error) { s.RevokeTokens(); return http.StatusNoContent, nil, nil })
	h("GET /_sim/stats", func(c *call) (int, any, error) { return http.StatusOK, s.Stats(), nil })
	h("GET /_sim/healthz", func(c *call) (int, any, error) { return http.StatusOK, map[string]string{"status": "ok"}, nil })
	mux.Handle("/_sim/", s.adminAPI(func(c *call) (int, any, error) {
		return 0, nil, errf(http.StatusNotFound, "NotFound", "no such admin call: %s %s", c.r.Method, c.r.URL.Path)
	}))
}

// adminAPI is like api without faults, latency or auth, and with Keystone-shaped errors.
func (s *Sim) adminAPI(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &call{s: s, w: w, r: r, service: ""}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("admin handler panicked", "path", r.URL.Path, "panic", p)
				c.fail(errf(http.StatusInternalServerError, "InternalServerError", "internal error"))
			}
		}()
		s.advance()
		status, body, err := h(c)
		if err != nil {
			c.fail(err)
			return
		}
		c.writeJSON(status, body)
	})
}

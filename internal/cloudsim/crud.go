package cloudsim

import (
	"net/http"
	"time"
)

// revisioned is a Neutron resource with a revision number (standard-attr-revisions) and an update time.
type revisioned interface {
	item
	revision() int
	touch(now time.Time) // a new revision, updated at now
}

func (v *network) revision() int  { return v.Revision }
func (v *subnet) revision() int   { return v.Revision }
func (v *port) revision() int     { return v.Revision }
func (v *secGroup) revision() int { return v.Revision }
func (v *router) revision() int   { return v.Revision }

func (v *network) touch(now time.Time)  { v.Revision++; v.Updated = now }
func (v *subnet) touch(now time.Time)   { v.Revision++; v.Updated = now }
func (v *port) touch(now time.Time)     { v.Revision++; v.Updated = now }
func (v *secGroup) touch(now time.Time) { v.Revision++; v.Updated = now }
func (v *router) touch(now time.Time)   { v.Revision++; v.Updated = now }

// resource tells the generic handlers about one kind of Neutron resource.
type resource[T revisioned] struct {
	key  string                         // the member that wraps one in bodies: "network"
	find func(*call, string) (T, error) // one the caller may see, by ID (callers hold the lock)
	view func(T) any
}

func (s *neutron) networks() resource[*network] {
	return resource[*network]{key: "network", find: s.getNetworkLocked, view: viewNetwork}
}

func (s *neutron) subnets() resource[*subnet] {
	return resource[*subnet]{key: "subnet", find: s.getSubnetLocked, view: viewSubnet}
}

func (s *neutron) ports() resource[*port] {
	return resource[*port]{key: "port", find: s.getPortLocked, view: viewPort}
}

func (s *neutron) secGroups() resource[*secGroup] {
	return resource[*secGroup]{key: "security_group", find: s.getSecGroupLocked, view: s.viewSecGroup}
}

func (s *neutron) routers() resource[*router] {
	return resource[*router]{key: "router", find: s.getRouterLocked, view: viewRouter}
}

// decodeFields reads a request body {key: {fields}} into the fields.
func decodeFields[B any](c *call, key string) (*B, error) {
	var body map[string]*B
	if err := c.decode(&body); err != nil {
		return nil, err
	}
	b := body[key]
	if b == nil {
		return nil, badRequest("Resource body required")
	}
	return b, nil
}

// findForWrite finds the resource of the request's path for a change: one the caller may see, at the revision
// of Neutron's If-Match when the request has one. Callers hold the lock.
func (r resource[T]) findForWrite(c *call) (T, error) {
	v, err := r.find(c, c.r.PathValue("id"))
	if err != nil {
		return v, err
	}
	if err := c.ifMatch(v.revision()); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// show answers GET .../{id}: the resource under the read lock, as {key: view}.
func show[T revisioned](s *neutron, c *call, r resource[T]) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, err := r.find(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{r.key: r.view(v)}, nil
}

// update answers PUT .../{id}: the body's fields B (wrapped in {key: ...}); then, under the lock, the
// resource, Neutron's If-Match, apply, a new revision, the answer. wait, when set, says how long to wait before
// taking the lock (the knob that makes security-group changes slow).
func update[T revisioned, B any](s *neutron, c *call, r resource[T], wait func(*B) time.Duration, apply func(T, *B) error) (int, any, error) {
	b, err := decodeFields[B](c, r.key)
	if err != nil {
		return 0, nil, err
	}
	if wait != nil {
		if err := s.sleep(c.r.Context(), wait(b)); err != nil {
			return 0, nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := r.findForWrite(c)
	if err != nil {
		return 0, nil, err
	}
	if err := apply(v, b); err != nil {
		return 0, nil, err
	}
	v.touch(s.now())
	return http.StatusOK, map[string]any{r.key: r.view(v)}, nil
}

// remove answers DELETE .../{id}: under the lock, the resource, Neutron's If-Match, then del, which refuses
// (a resource in use) or deletes it with what goes with it.
func remove[T revisioned](s *neutron, c *call, r resource[T], del func(T) error) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := r.findForWrite(c)
	if err != nil {
		return 0, nil, err
	}
	if err := del(v); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// create answers POST .../: the body's fields B (wrapped in {key: ...}); then, under the lock, the project
// the resource is for (the caller's, or for an admin the one ids names), and build, which checks the rest of the
// request, the project's quota, and stores the resource.
func create[T revisioned, B any](s *neutron, c *call, r resource[T], ids func(*B) (projectID, tenantID string), build func(project string, b *B) (T, error)) (int, any, error) {
	b, err := decodeFields[B](c, r.key)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, err := c.ownerFor(ids(b))
	if err != nil {
		return 0, nil, err
	}
	v, err := build(owner, b)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{r.key: r.view(v)}, nil
}

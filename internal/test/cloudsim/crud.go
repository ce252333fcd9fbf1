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

// resource tells the generic handlers about one kind of resource, of any service.
type resource[T item] struct {
	key  string                         // the member that wraps one in bodies: "network", "server"
	find func(*call, string) (T, error) // one the caller may see, by ID (callers hold the lock)
	view func(*call, T) any
	// deleted is the status of an accepted DELETE (0: 204 No Content; Cinder answers 202 Accepted).
	deleted int
}

// plain is a view that needs nothing of the call.
func plain[T any](view func(T) any) func(*call, T) any {
	return func(_ *call, v T) any { return view(v) }
}

func (s *neutron) networks() resource[*network] {
	return resource[*network]{key: "network", find: s.getNetworkLocked, view: plain(viewNetwork)}
}

func (s *neutron) subnets() resource[*subnet] {
	return resource[*subnet]{key: "subnet", find: s.getSubnetLocked, view: plain(viewSubnet)}
}

func (s *neutron) ports() resource[*port] {
	return resource[*port]{key: "port", find: s.getPortLocked, view: plain(viewPort)}
}

func (s *neutron) secGroups() resource[*secGroup] {
	return resource[*secGroup]{key: "security_group", find: s.getSecGroupLocked, view: plain(s.viewSecGroup)}
}

func (s *neutron) routers() resource[*router] {
	return resource[*router]{key: "router", find: s.getRouterLocked, view: plain(viewRouter)}
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
func findForWrite[T revisioned](c *call, r resource[T]) (T, error) {
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

// show answers GET .../{id} (the ID of the path, or id when the service routes by hand): the resource under the
// read lock, as {key: view}.
func show[T item](s *cloud, c *call, r resource[T], id string) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, err := r.find(c, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{r.key: r.view(c, v)}, nil
}

// index answers GET of a collection: one page (the call's marker and limit) of the resources of scope (all
// projects when empty) that match, as {plural: [view...], plural_links: [next]}.
func index[T item](s *cloud, c *call, coll *coll[T], plural, scope string, limit int, match func(T) bool, view func(*call, T) any) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	pg, err := list(coll, scope, c.query("marker"), limit, match)
	if err != nil {
		return 0, nil, err
	}
	out := make([]any, 0, len(pg.items))
	for _, v := range pg.items {
		out = append(out, view(c, v))
	}
	body := map[string]any{plural: out}
	if pg.more {
		body[plural+"_links"] = c.nextLink(pg.items[len(pg.items)-1].key())
	}
	return http.StatusOK, body, nil
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
	v, err := findForWrite(c, r)
	if err != nil {
		return 0, nil, err
	}
	if err := apply(v, b); err != nil {
		return 0, nil, err
	}
	v.touch(s.now())
	return http.StatusOK, map[string]any{r.key: r.view(c, v)}, nil
}

// remove answers DELETE .../{id}: under the lock, the resource, Neutron's If-Match, then del, which refuses
// (a resource in use) or deletes it with what goes with it.
func remove[T revisioned](s *neutron, c *call, r resource[T], del func(T) error) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := findForWrite(c, r)
	if err != nil {
		return 0, nil, err
	}
	if err := del(v); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// pending is a resource of Nova, Cinder or Octavia whose changes finish later: it records when (its Due time,
// persisted with it) and the event kind that finishes them.
type pending interface {
	item
	due() *time.Time
	kind() eventKind
}

// Durations start may answer besides a latency.
const (
	never     time.Duration = -1 // the change never finishes (a volume stuck in deleting)
	asPlanned time.Duration = -2 // nothing new: a change under way keeps its time (a second delete)
)

// later makes v's change under way finish d from now (never: not at all). Callers hold the lock.
func (s *cloud) later(v pending, d time.Duration) {
	switch d {
	case asPlanned:
	case never:
		*v.due() = time.Time{}
	default:
		at := s.now().Add(d)
		*v.due() = at
		s.schedule(at, v.kind(), v.key())
	}
}

// removeLater answers DELETE .../{id} of a resource its service deletes asynchronously: under the lock, the
// resource, then start, which refuses (its state, its children) or marks it as being deleted and answers how
// long the deletion takes (a knob of its service; never, or asPlanned); the resource goes when that time comes.
func removeLater[T pending](s *cloud, c *call, r resource[T], id string, start func(T) (time.Duration, error)) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := r.find(c, id)
	if err != nil {
		return 0, nil, err
	}
	d, err := start(v)
	if err != nil {
		return 0, nil, err
	}
	s.later(v, d)
	if r.deleted != 0 {
		return r.deleted, nil, nil
	}
	return http.StatusNoContent, nil, nil
}

// settle finishes the change of the resource of coll an event is for, unless it is gone or its change was
// planned again since (its Due moved): finish applies the new state, or removes it.
func settle[T pending](coll *coll[T], e event, finish func(T)) {
	v, ok := coll.get(e.id)
	if !ok || !v.due().Equal(e.at) {
		return
	}
	*v.due() = time.Time{}
	finish(v)
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
	return http.StatusCreated, map[string]any{r.key: r.view(c, v)}, nil
}

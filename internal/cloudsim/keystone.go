package cloudsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

const keystoneTimeFormat = "2006-01-02T15:04:05.000000Z"

func (s *Sim) keystoneRoutes(mux *http.ServeMux) {
	versions := func(c *call) (int, any, error) {
		return http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{keystoneVersion(c.baseURL())}}}, nil
	}
	mux.Handle("GET /{$}", s.api(svcIdentity, false, versions))
	mux.Handle("GET /v3", s.api(svcIdentity, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"version": keystoneVersion(c.baseURL())}, nil
	}))
	mux.Handle("GET /v3/{$}", s.api(svcIdentity, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"version": keystoneVersion(c.baseURL())}, nil
	}))
	mux.Handle("POST /v3/auth/tokens", s.api(svcIdentity, false, s.issueToken))
	mux.Handle("GET /v3/auth/tokens", s.api(svcIdentity, false, s.validateToken))
	mux.Handle("HEAD /v3/auth/tokens", s.api(svcIdentity, false, func(c *call) (int, any, error) {
		if _, _, err := s.validateToken(c); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, nil, nil
	}))
	mux.Handle("DELETE /v3/auth/tokens", s.api(svcIdentity, false, s.revokeToken))
	mux.Handle("GET /v3/auth/catalog", s.api(svcIdentity, true, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"catalog": s.catalog(c.baseURL(), c.tok.ProjectID)}, nil
	}))
	mux.Handle("GET /v3/projects", s.api(svcIdentity, true, s.listProjects))
	mux.Handle("GET /v3/auth/projects", s.api(svcIdentity, true, s.listProjects))
	mux.Handle("/v3/", s.notFound(svcIdentity))
}

func keystoneVersion(base string) map[string]any {
	return map[string]any{
		"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links":       []any{map[string]string{"rel": "self", "href": base + "/v3/"}},
		"media-types": []any{map[string]string{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}
}

type authRef struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Domain *authRef `json:"domain"`
}

type authRequest struct {
	Auth *struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User struct {
					authRef
					Password string `json:"password"`
				} `json:"user"`
			} `json:"password"`
			Token *struct {
				ID string `json:"id"`
			} `json:"token"`
			AppCred *struct {
				ID     string   `json:"id"`
				Name   string   `json:"name"`
				Secret string   `json:"secret"`
				User   *authRef `json:"user"`
			} `json:"application_credential"`
		} `json:"identity"`
		Scope json.RawMessage `json:"scope"`
	} `json:"auth"`
}

var errUnauthorized = errf(http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")

func (s *Sim) issueToken(c *call) (int, any, error) {
	var req authRequest
	if err := c.decode(&req); err != nil {
		return 0, nil, err
	}
	if req.Auth == nil || len(req.Auth.Identity.Methods) == 0 {
		return 0, nil, badRequest("'identity' with 'methods' is a required property in 'auth'")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.Auth.Identity
	var u *user
	scopeProject := ""
	method := id.Methods[0]
	switch method {
	case "password":
		if id.Password == nil {
			return 0, nil, badRequest("'password' is a required property in 'identity'")
		}
		pu := id.Password.User
		u = s.findUserLocked(pu.authRef)
		if u == nil || u.Password != pu.Password {
			return 0, nil, errUnauthorized
		}
	case "token":
		if id.Token == nil {
			return 0, nil, badRequest("'token' is a required property in 'identity'")
		}
		t, ok := s.st.tokens[id.Token.ID]
		if !ok || !s.clock.Now().Before(t.ExpiresAt) {
			return 0, nil, errUnauthorized
		}
		u = s.st.users[t.UserID]
		scopeProject = t.ProjectID
	case "application_credential":
		ac := id.AppCred
		if ac == nil {
			return 0, nil, badRequest("'application_credential' is a required property in 'identity'")
		}
		var found *appCred
		if ac.ID != "" {
			found = s.st.appCreds[ac.ID]
		} else if ac.Name != "" && ac.User != nil {
			if owner := s.findUserLocked(*ac.User); owner != nil {
				for _, a := range s.st.appCreds {
					if a.Name == ac.Name && a.UserID == owner.ID {
						found = a
					}
				}
			}
		}
		if found == nil || found.Secret != ac.Secret {
			return 0, nil, errUnauthorized
		}
		if len(req.Auth.Scope) > 0 && string(req.Auth.Scope) != "null" {
			return 0, nil, errUnauthorized
		}
		u = s.st.users[found.UserID]
		scopeProject = found.ProjectID
	default:
		return 0, nil, errUnauthorized
	}
	if u == nil {
		return 0, nil, errUnauthorized
	}
	if method != "application_credential" && len(req.Auth.Scope) > 0 && string(req.Auth.Scope) != "null" {
		p, err := s.resolveScopeLocked(req.Auth.Scope)
		if err != nil {
			return 0, nil, err
		}
		scopeProject = p
	} else if scopeProject == "" && u.DefaultPj != "" {
		scopeProject = u.DefaultPj
	}
	admin := false
	if scopeProject != "" {
		a, member := u.Projects[scopeProject]
		if !member || s.st.projects[scopeProject] == nil {
			return 0, nil, errUnauthorized
		}
		admin = a
	}
	now := s.now()
	t := &token{
		ID: "gAAAAA" + s.newHex(48), UserID: u.ID, ProjectID: scopeProject, Admin: admin,
		Methods: []string{method}, IssuedAt: now, ExpiresAt: now.Add(time.Duration(s.knobs.TokenTTL)),
	}
	s.st.tokens[t.ID] = t
	s.pruneTokensLocked()
	c.w.Header().Set("X-Subject-Token", t.ID)
	return http.StatusCreated, map[string]any{"token": s.tokenBodyLocked(c.baseURL(), t)}, nil
}

// pruneTokensLocked drops expired tokens once there are many.
func (s *Sim) pruneTokensLocked() {
	if len(s.st.tokens) < 10000 {
		return
	}
	now := s.clock.Now()
	for id, t := range s.st.tokens {
		if !now.Before(t.ExpiresAt) {
			delete(s.st.tokens, id)
		}
	}
}

func (s *Sim) findUserLocked(ref authRef) *user {
	if ref.ID != "" {
		return s.st.users[ref.ID]
	}
	if ref.Name == "" || ref.Domain == nil {
		return nil
	}
	if ref.Domain.ID != "" && ref.Domain.ID != DefaultDomainID {
		return nil
	}
	if ref.Domain.ID == "" && ref.Domain.Name != DefaultDomainName {
		return nil
	}
	for _, u := range s.st.users {
		if u.Name == ref.Name {
			return u
		}
	}
	return nil
}

func (s *Sim) resolveScopeLocked(raw json.RawMessage) (string, error) {
	var unscoped string
	if json.Unmarshal(raw, &unscoped) == nil {
		if unscoped == "unscoped" {
			return "", nil
		}
		return "", badRequest("Invalid scope %q", unscoped)
	}
	var sc struct {
		Project *authRef `json:"project"`
		Domain  *authRef `json:"domain"`
		System  any      `json:"system"`
	}
	if err := json.Unmarshal(raw, &sc); err != nil {
		return "", badRequest("Invalid scope: %v", err)
	}
	if sc.Project == nil {
		// Domain and system scopes hold no project: services refuse such tokens.
		if sc.Domain != nil || sc.System != nil {
			return "", nil
		}
		return "", badRequest("Invalid scope: want project, domain or system")
	}
	if sc.Project.ID != "" {
		if s.st.projects[sc.Project.ID] == nil {
			return "", errUnauthorized
		}
		return sc.Project.ID, nil
	}
	if sc.Project.Domain == nil {
		return "", badRequest("Invalid scope: a project given by name needs its domain")
	}
	d := sc.Project.Domain
	if (d.ID != "" && d.ID != DefaultDomainID) || (d.ID == "" && d.Name != DefaultDomainName) {
		return "", errUnauthorized
	}
	for _, p := range s.st.projects {
		if p.Name == sc.Project.Name {
			return p.ID, nil
		}
	}
	return "", errUnauthorized
}

func (s *Sim) tokenBodyLocked(base string, t *token) map[string]any {
	u := s.st.users[t.UserID]
	roles := []any{map[string]string{"id": "member", "name": "member"}, map[string]string{"id": "reader", "name": "reader"}}
	if t.Admin {
		roles = append(roles, map[string]string{"id": "admin", "name": "admin"})
	}
	body := map[string]any{
		"methods":    t.Methods,
		"expires_at": t.ExpiresAt.UTC().Format(keystoneTimeFormat),
		"issued_at":  t.IssuedAt.UTC().Format(keystoneTimeFormat),
		"audit_ids":  []string{t.ID[6:28]},
		"user": map[string]any{
			"id": u.ID, "name": u.Name, "password_expires_at": nil,
			"domain": map[string]string{"id": DefaultDomainID, "name": DefaultDomainName},
		},
	}
	if p := s.st.projects[t.ProjectID]; p != nil {
		body["project"] = map[string]any{"id": p.ID, "name": p.Name,
			"domain": map[string]string{"id": DefaultDomainID, "name": DefaultDomainName}}
		body["roles"] = roles
		body["is_domain"] = false
		body["catalog"] = s.catalog(base, p.ID)
	}
	return body
}

// catalog lists every simulated service, all on base.
func (s *Sim) catalog(base, projectID string) []any {
	entry := func(typ, name, url string) any {
		var eps []any
		for _, iface := range []string{"public", "internal", "admin"} {
			eps = append(eps, map[string]string{
				"id": name + "-" + iface, "interface": iface, "region": s.opts.Region,
				"region_id": s.opts.Region, "url": url,
			})
		}
		return map[string]any{"id": name, "type": typ, "name": name, "endpoints": eps}
	}
	return []any{
		entry("identity", "keystone", base+"/v3"),
		entry("network", "neutron", base+"/networking"),
		entry("compute", "nova", base+"/compute/v2.1"),
		entry("volumev3", "cinderv3", base+"/volume/v3/"+projectID),
		entry("block-storage", "cinder", base+"/volume/v3/"+projectID),
		entry("load-balancer", "octavia", base+"/load-balancer"),
	}
}

// subjectToken checks the caller's token and finds the subject token. Callers hold s.mu.
func (s *Sim) subjectTokenLocked(c *call) (*token, error) {
	now := s.clock.Now()
	caller, ok := s.st.tokens[c.r.Header.Get("X-Auth-Token")]
	if !ok || !now.Before(caller.ExpiresAt) {
		return nil, errUnauthorized
	}
	sub, ok := s.st.tokens[c.r.Header.Get("X-Subject-Token")]
	if !ok || !now.Before(sub.ExpiresAt) {
		return nil, errf(http.StatusNotFound, "NotFound", "Could not find token: %s.", c.r.Header.Get("X-Subject-Token"))
	}
	return sub, nil
}

func (s *Sim) validateToken(c *call) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sub, err := s.subjectTokenLocked(c)
	if err != nil {
		return 0, nil, err
	}
	c.w.Header().Set("X-Subject-Token", sub.ID)
	return http.StatusOK, map[string]any{"token": s.tokenBodyLocked(c.baseURL(), sub)}, nil
}

func (s *Sim) revokeToken(c *call) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, err := s.subjectTokenLocked(c)
	if err != nil {
		return 0, nil, err
	}
	delete(s.st.tokens, sub.ID)
	return http.StatusNoContent, nil, nil
}

func (s *Sim) listProjects(c *call) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u := s.st.users[c.tok.UserID]
	var out []any
	for _, p := range sortedValues(s.st.projects) {
		if c.r.URL.Path == "/v3/projects" && !c.admin() {
			if p.ID != c.tok.ProjectID {
				continue
			}
		} else if _, member := u.Projects[p.ID]; !member && c.r.URL.Path == "/v3/auth/projects" {
			continue
		}
		if n := c.query("name"); n != "" && p.Name != n {
			continue
		}
		out = append(out, map[string]any{"id": p.ID, "name": p.Name, "domain_id": p.DomainID, "enabled": true,
			"is_domain": false, "parent_id": p.DomainID, "description": "", "tags": []string{},
			"links": map[string]string{"self": c.baseURL() + "/v3/projects/" + p.ID}})
	}
	if out == nil {
		out = []any{}
	}
	return http.StatusOK, map[string]any{"projects": out, "links": map[string]any{"self": c.baseURL() + c.r.URL.Path, "next": nil, "previous": nil}}, nil
}

// Keystone seeding.

// CreateProject adds a project (in the Default domain) with a "default" security group and
// returns its ID. A project of that name that exists already is returned as is.
func (s *Sim) CreateProject(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createProjectLocked(name)
}

func (s *Sim) createProjectLocked(name string) string {
	for _, p := range s.st.projects {
		if p.Name == name {
			return p.ID
		}
	}
	p := &project{ID: s.newHex(16), Name: name, DomainID: DefaultDomainID}
	s.st.projects[p.ID] = p
	s.createSecGroupLocked(p.ID, "default", "Default security group")
	return p.ID
}

// ProjectID returns the ID of the named project.
func (s *Sim) ProjectID(name string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.st.projects {
		if p.Name == name {
			return p.ID, true
		}
	}
	return "", false
}

// CreateUser adds a user with a password and a role on each project: admin when admin is set,
// member otherwise. The first project is the user's default project. It returns the user ID.
func (s *Sim) CreateUser(name, password string, admin bool, projectIDs ...string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.st.users {
		if u.Name == name {
			return "", fmt.Errorf("create user %s: a user of that name exists", name)
		}
	}
	u := &user{ID: s.newHex(16), Name: name, DomainID: DefaultDomainID, Password: password, Projects: map[string]bool{}}
	for _, p := range projectIDs {
		if s.st.projects[p] == nil {
			return "", fmt.Errorf("create user %s: no project %s", name, p)
		}
		u.Projects[p] = admin
	}
	if len(projectIDs) > 0 {
		u.DefaultPj = projectIDs[0]
	}
	s.st.users[u.ID] = u
	return u.ID, nil
}

// CreateApplicationCredential adds an application credential of a user, bound to one of the
// user's projects, and returns its ID.
func (s *Sim) CreateApplicationCredential(userID, projectID, name, secret string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.st.users[userID]
	if u == nil {
		return "", fmt.Errorf("create application credential %s: no user %s", name, userID)
	}
	if _, ok := u.Projects[projectID]; !ok {
		return "", fmt.Errorf("create application credential %s: user %s has no role on project %s", name, userID, projectID)
	}
	a := &appCred{ID: s.newHex(16), Name: name, Secret: secret, UserID: userID, ProjectID: projectID}
	s.st.appCreds[a.ID] = a
	return a.ID, nil
}

// RevokeTokens drops every issued token (a Keystone restart with new keys).
func (s *Sim) RevokeTokens() {
	s.mu.Lock()
	s.st.tokens = map[string]*token{}
	s.mu.Unlock()
}

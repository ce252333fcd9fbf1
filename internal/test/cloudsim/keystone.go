package cloudsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

const keystoneTimeFormat = "2006-01-02T15:04:05.000000Z"

// identity is Keystone: projects, users, application credentials and tokens, behind a lock of their own (every
// call of every service validates its token here).
type identity struct {
	*core
	region string

	mu sync.RWMutex // guards st
	st *identityState
}

// identityState is what Keystone holds.
type identityState struct {
	projects map[string]*project
	users    map[string]*user
	appCreds map[string]*appCred
	tokens   map[string]*token
}

func newIdentityState() *identityState {
	return &identityState{projects: map[string]*project{}, users: map[string]*user{}, appCreds: map[string]*appCred{},
		tokens: map[string]*token{}}
}

func newIdentity(co *core, region string) *identity {
	return &identity{core: co, region: region, st: newIdentityState()}
}

type project struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	DomainID string `json:"domain_id"`
}

type user struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	DomainID  string          `json:"domain_id"`
	Password  string          `json:"password"`
	Projects  map[string]bool `json:"projects"` // project ID -> admin role
	DefaultPj string          `json:"default_project_id,omitempty"`
}

type appCred struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Secret    string `json:"secret"`
	UserID    string `json:"user_id"`
	ProjectID string `json:"project_id"`
}

type token struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id"`
	ProjectID string    `json:"project_id,omitempty"`
	Admin     bool      `json:"admin"`
	Methods   []string  `json:"methods"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *identity) routes(mux *http.ServeMux, api apiFunc) {
	versions := func(c *call) (int, any, error) {
		return http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{keystoneVersion(c.baseURL())}}}, nil
	}
	mux.Handle("GET /{$}", api(svcIdentity, false, versions))
	mux.Handle("GET /v3", api(svcIdentity, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"version": keystoneVersion(c.baseURL())}, nil
	}))
	mux.Handle("GET /v3/{$}", api(svcIdentity, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"version": keystoneVersion(c.baseURL())}, nil
	}))
	mux.Handle("POST /v3/auth/tokens", api(svcIdentity, false, s.issueToken))
	mux.Handle("GET /v3/auth/tokens", api(svcIdentity, false, s.validateToken))
	mux.Handle("HEAD /v3/auth/tokens", api(svcIdentity, false, func(c *call) (int, any, error) {
		if _, _, err := s.validateToken(c); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, nil, nil
	}))
	mux.Handle("DELETE /v3/auth/tokens", api(svcIdentity, false, s.revokeToken))
	mux.Handle("GET /v3/auth/catalog", api(svcIdentity, true, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"catalog": s.catalog(c.baseURL(), c.tok.ProjectID)}, nil
	}))
	mux.Handle("GET /v3/projects", api(svcIdentity, true, s.listProjects))
	mux.Handle("GET /v3/auth/projects", api(svcIdentity, true, s.listProjects))
	mux.Handle("/v3/", api(svcIdentity, false, notFound))
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

func (s *identity) issueToken(c *call) (int, any, error) {
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
		Methods: []string{method}, IssuedAt: now, ExpiresAt: now.Add(time.Duration(s.knob().TokenTTL)),
	}
	s.st.tokens[t.ID] = t
	s.pruneTokensLocked()
	c.w.Header().Set("X-Subject-Token", t.ID)
	return http.StatusCreated, map[string]any{"token": s.tokenBodyLocked(c.baseURL(), t)}, nil
}

// pruneTokensLocked drops expired tokens once there are many.
func (s *identity) pruneTokensLocked() {
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

func (s *identity) findUserLocked(ref authRef) *user {
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

func (s *identity) resolveScopeLocked(raw json.RawMessage) (string, error) {
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

func (s *identity) tokenBodyLocked(base string, t *token) map[string]any {
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
func (s *identity) catalog(base, projectID string) []any {
	entry := func(typ, name, url string) any {
		var eps []any
		for _, iface := range []string{"public", "internal", "admin"} {
			eps = append(eps, map[string]string{
				"id": name + "-" + iface, "interface": iface, "region": s.region,
				"region_id": s.region, "url": url,
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
func (s *identity) subjectTokenLocked(c *call) (*token, error) {
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

func (s *identity) validateToken(c *call) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sub, err := s.subjectTokenLocked(c)
	if err != nil {
		return 0, nil, err
	}
	c.w.Header().Set("X-Subject-Token", sub.ID)
	return http.StatusOK, map[string]any{"token": s.tokenBodyLocked(c.baseURL(), sub)}, nil
}

func (s *identity) revokeToken(c *call) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, err := s.subjectTokenLocked(c)
	if err != nil {
		return 0, nil, err
	}
	delete(s.st.tokens, sub.ID)
	return http.StatusNoContent, nil, nil
}

func (s *identity) listProjects(c *call) (int, any, error) {
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

// createProject adds a project (or finds the one of that name) and reports whether it is new.
func (s *identity) createProject(name string) (id string, created bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.st.projects {
		if p.Name == name {
			return p.ID, false
		}
	}
	p := &project{ID: s.newHex(16), Name: name, DomainID: DefaultDomainID}
	s.st.projects[p.ID] = p
	return p.ID, true
}

// hasProject reports whether the project exists.
func (s *identity) hasProject(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.projects[id] != nil
}

// projectIDs returns the IDs of every project, sorted.
func (s *identity) projectIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.st.projects))
	for _, p := range sortedValues(s.st.projects) {
		out = append(out, p.ID)
	}
	return out
}

// projectID returns the ID of the named project.
func (s *identity) projectID(name string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.st.projects {
		if p.Name == name {
			return p.ID, true
		}
	}
	return "", false
}

// createUser adds a user (see Sim.CreateUser).
func (s *identity) createUser(name, password string, admin bool, projectIDs ...string) (string, error) {
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

// createApplicationCredential adds an application credential (see Sim.CreateApplicationCredential).
func (s *identity) createApplicationCredential(userID, projectID, name, secret string) (string, error) {
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

// revokeTokens drops every issued token.
func (s *identity) revokeTokens() {
	s.mu.Lock()
	s.st.tokens = map[string]*token{}
	s.mu.Unlock()
}

// CreateProject adds a project (in the Default domain) with a "default" security group and
// returns its ID. A project of that name that exists already is returned as is.
func (s *Sim) CreateProject(name string) string {
	pid, created := s.id.createProject(name)
	if created {
		s.mu.Lock()
		s.createSecGroupLocked(pid, "default", "Default security group")
		s.mu.Unlock()
	}
	return pid
}

// ProjectID returns the ID of the named project.
func (s *Sim) ProjectID(name string) (string, bool) { return s.id.projectID(name) }

// CreateUser adds a user with a password and a role on each project: admin when admin is set,
// member otherwise. The first project is the user's default project. It returns the user ID.
func (s *Sim) CreateUser(name, password string, admin bool, projectIDs ...string) (string, error) {
	return s.id.createUser(name, password, admin, projectIDs...)
}

// CreateApplicationCredential adds an application credential of a user, bound to one of the
// user's projects, and returns its ID.
func (s *Sim) CreateApplicationCredential(userID, projectID, name, secret string) (string, error) {
	return s.id.createApplicationCredential(userID, projectID, name, secret)
}

// RevokeTokens drops every issued token (a Keystone restart with new keys).
func (s *Sim) RevokeTokens() { s.id.revokeTokens() }

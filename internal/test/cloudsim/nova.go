package cloudsim

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

const cprefix = "/compute/v2.1"

func (s *nova) routes(mux *http.ServeMux, api apiFunc) {
	h := func(pattern string, fn handlerFunc) { mux.Handle(pattern, api(svcCompute, true, fn)) }
	version := func(base string) map[string]any {
		return map[string]any{"id": "v2.1", "status": "CURRENT", "version": "2.90", "min_version": "2.1",
			"updated": "2013-07-23T11:33:21Z", "links": []any{map[string]string{"rel": "self", "href": base + cprefix + "/"}}}
	}
	mux.Handle("GET /compute/{$}", api(svcCompute, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"versions": []any{version(c.baseURL())}}, nil
	}))
	for _, p := range []string{"GET " + cprefix, "GET " + cprefix + "/{$}"} {
		mux.Handle(p, api(svcCompute, false, func(c *call) (int, any, error) {
			return http.StatusOK, map[string]any{"version": version(c.baseURL())}, nil
		}))
	}
	h("GET "+cprefix+"/servers", func(c *call) (int, any, error) { return s.listServers(c, false) })
	h("GET "+cprefix+"/servers/detail", func(c *call) (int, any, error) { return s.listServers(c, true) })
	h("POST "+cprefix+"/servers", s.createServer)
	h("GET "+cprefix+"/servers/{id}", s.getServer)
	h("DELETE "+cprefix+"/servers/{id}", s.deleteServer)
	h("POST "+cprefix+"/servers/{id}/action", s.serverAction)
	h("GET "+cprefix+"/servers/{id}/os-security-groups", s.serverSecGroups)
	h("GET "+cprefix+"/servers/{id}/os-instance-actions", s.serverActions)
	h("GET "+cprefix+"/servers/{id}/metadata", s.serverMetadata)
	h("POST "+cprefix+"/servers/{id}/metadata", s.updateServerMetadata)
	h("GET "+cprefix+"/servers/{id}/tags", s.serverTags)
	h("GET "+cprefix+"/servers/{id}/tags/{tag}", s.checkServerTag)
	h("PUT "+cprefix+"/servers/{id}/tags/{tag}", s.addServerTag)
	h("DELETE "+cprefix+"/servers/{id}/tags/{tag}", s.removeServerTag)
	h("DELETE "+cprefix+"/servers/{id}/os-volume_attachments/{volume}", s.detachVolume)
	mux.Handle("/compute/", api(svcCompute, false, notFound))
}

type novaAddress struct {
	Version int    `json:"version"`
	Addr    string `json:"addr"`
	Type    string `json:"OS-EXT-IPS:type"`
	MAC     string `json:"OS-EXT-IPS-MAC:mac_addr"`
}

type link struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

type idRef struct {
	ID string `json:"id"`
}

type nameRef struct {
	Name string `json:"name"`
}

type volumeRef struct {
	ID                  string `json:"id"`
	DeleteOnTermination bool   `json:"delete_on_termination"`
}

type serverView struct {
	ID             string                   `json:"id"`
	Name           string                   `json:"name"`
	Status         string                   `json:"status"`
	TenantID       string                   `json:"tenant_id"`
	UserID         string                   `json:"user_id"`
	Metadata       map[string]string        `json:"metadata"`
	HostID         string                   `json:"hostId"`
	Image          idRef                    `json:"image"`
	Flavor         idRef                    `json:"flavor"`
	Created        string                   `json:"created"`
	Updated        string                   `json:"updated"`
	Addresses      map[string][]novaAddress `json:"addresses"`
	AccessIPv4     string                   `json:"accessIPv4"`
	AccessIPv6     string                   `json:"accessIPv6"`
	Links          []link                   `json:"links"`
	KeyName        *string                  `json:"key_name"`
	Progress       int                      `json:"progress"`
	ConfigDrive    string                   `json:"config_drive"`
	VMState        string                   `json:"OS-EXT-STS:vm_state"`
	TaskState      *string                  `json:"OS-EXT-STS:task_state"`
	PowerState     int                      `json:"OS-EXT-STS:power_state"`
	AZ             string                   `json:"OS-EXT-AZ:availability_zone"`
	LaunchedAt     *string                  `json:"OS-SRV-USG:launched_at"`
	TerminatedAt   *string                  `json:"OS-SRV-USG:terminated_at"`
	DiskConfig     string                   `json:"OS-DCF:diskConfig"`
	SecurityGroups []nameRef                `json:"security_groups,omitempty"`
	Volumes        []volumeRef              `json:"os-extended-volumes:volumes_attached"`
	Locked         bool                     `json:"locked"`
	Tags           []string                 `json:"tags"`
}

// attachmentsLocked maps server IDs to the volumes attached to them, for one project.
func (s *cloud) attachmentsLocked(project string) map[string][]string {
	var out map[string][]string
	for _, id := range s.st.volumes.ids(project) {
		if vol := s.st.volumes.m[id]; vol.AttachedTo != "" {
			if out == nil {
				out = map[string][]string{}
			}
			out[vol.AttachedTo] = append(out[vol.AttachedTo], vol.ID)
		}
	}
	return out
}

func (s *nova) viewServer(base string, v *server, attached map[string][]string) any {
	addrs := make(map[string][]novaAddress, 1)
	for _, pid := range v.Ports {
		p, ok := s.st.ports.get(pid)
		if !ok {
			continue
		}
		netName := p.NetworkID
		if n, ok := s.st.networks.get(p.NetworkID); ok {
			netName = n.Name
		}
		for _, f := range p.FixedIPs {
			ver := 4
			if strings.Contains(f.IPAddress, ":") {
				ver = 6
			}
			addrs[netName] = append(addrs[netName], novaAddress{Version: ver, Addr: f.IPAddress, Type: "fixed", MAC: p.MAC})
		}
	}
	view := &serverView{ID: v.ID, Name: v.Name, Status: v.Status, TenantID: v.Project, UserID: v.UserID,
		Metadata: v.Metadata, HostID: hostID(v.Project, v.host()), Image: idRef{v.ImageID}, Flavor: idRef{v.FlavorID},
		Created: neutronTime(v.Created), Updated: neutronTime(v.Updated), Addresses: addrs,
		Links: []link{{Rel: "self", Href: base + cprefix + "/servers/" + v.ID}}, VMState: v.VMState, AZ: "nova",
		DiskConfig: "MANUAL", Volumes: []volumeRef{}, Tags: orEmpty(v.Tags)}
	if view.Metadata == nil {
		view.Metadata = map[string]string{}
	}
	if v.TaskState != "" {
		ts := v.TaskState
		view.TaskState = &ts
	}
	switch v.VMState {
	case "active":
		view.PowerState = 1
	case "stopped":
		view.PowerState = 4
	}
	if v.Status != "BUILD" {
		l := microNoZ(v.Created)
		view.LaunchedAt = &l
	}
	for _, g := range s.serverGroupNamesLocked(v) {
		view.SecurityGroups = append(view.SecurityGroups, nameRef{g})
	}
	for _, id := range attached[v.ID] {
		view.Volumes = append(view.Volumes, volumeRef{ID: id})
	}
	return view
}

// serverGroupsLocked lists the IDs of the security groups on a server's ports.
func (s *cloud) serverGroupsLocked(v *server) []string {
	if len(v.Ports) == 0 {
		return v.Groups
	}
	var out []string
	for _, pid := range v.Ports {
		if p, ok := s.st.ports.get(pid); ok {
			for _, g := range p.SecurityGroups {
				if !slices.Contains(out, g) {
					out = append(out, g)
				}
			}
		}
	}
	return out
}

func (s *cloud) serverGroupNamesLocked(v *server) []string {
	var out []string
	for _, g := range s.serverGroupsLocked(v) {
		if sg, ok := s.st.secGroups.get(g); ok && !slices.Contains(out, sg.Name) {
			out = append(out, sg.Name)
		}
	}
	return out
}

func isAllTenants(c *call) bool {
	q := c.values()
	if !q.Has("all_tenants") {
		return false
	}
	v := strings.ToLower(q.Get("all_tenants"))
	return v != "0" && v != "false" && v != "f" && v != "no" && v != "off"
}

func (s *nova) listServers(c *call, detail bool) (int, any, error) {
	limit, err := c.limit(1000)
	if err != nil {
		return 0, nil, err
	}
	scope := c.project()
	if isAllTenants(c) {
		if !c.admin() {
			return 0, nil, errf(http.StatusForbidden, "Forbidden", "Policy doesn't allow os_compute_api:servers:index:get_all_tenants to be performed.")
		}
		scope = c.query("project_id")
		if scope == "" {
			scope = c.query("tenant_id")
		}
	}
	var nameRe *regexp.Regexp
	if n := c.query("name"); n != "" {
		nameRe, err = regexp.Compile(n)
		if err != nil {
			nameRe = regexp.MustCompile(regexp.QuoteMeta(n))
		}
	}
	status := strings.ToUpper(c.query("status"))
	q := c.values()
	match := func(v *server) bool {
		if nameRe != nil && !nameRe.MatchString(v.Name) {
			return false
		}
		if !matchTags(q, func(string) ([]string, bool) { return v.Tags, true }) {
			return false
		}
		return status == "" || v.Status == status
	}
	if !detail {
		return index(s.cloud, c, s.st.servers, "servers", scope, limit, match, func(c *call, v *server) any {
			return map[string]any{"id": v.ID, "name": v.Name,
				"links": []map[string]string{{"rel": "self", "href": c.baseURL() + cprefix + "/servers/" + v.ID}}}
		})
	}
	// The details of a page of servers are written straight into the body (fastjson.go): the scale benchmarks
	// list thousands of servers.
	s.mu.RLock()
	defer s.mu.RUnlock()
	pg, err := list(s.st.servers, scope, c.query("marker"), limit, match)
	if err != nil {
		return 0, nil, err
	}
	base := c.baseURL()
	{
		var attached map[string][]string
		if len(pg.items) > 0 {
			attached = s.attachmentsLocked(scope)
		}
		b := getRaw()
		b = append(b, `{"servers":[`...)
		for i, v := range pg.items {
			if i > 0 {
				b = append(b, ',')
			}
			b = s.appendServerJSON(b, base, v, attached)
		}
		b = append(b, ']')
		if pg.more {
			b = append(b, `,"servers_links":[{"rel":"next","href":`...)
			b = appendString(b, c.nextLink(pg.items[len(pg.items)-1].ID)[0]["href"])
			b = append(b, "}]"...)
		}
		return http.StatusOK, rawJSON(append(b, '}')), nil
	}
}

func (s *cloud) getServerLocked(c *call, id string) (*server, error) {
	v, ok := s.st.servers.get(id)
	if !ok || !c.visible(v.Project) {
		return nil, errf(http.StatusNotFound, "itemNotFound", "Instance %s could not be found.", id)
	}
	return v, nil
}

func (s *nova) servers() resource[*server] {
	return resource[*server]{key: "server", find: s.getServerLocked, view: func(c *call, v *server) any {
		return s.viewServer(c.baseURL(), v, s.attachmentsLocked(v.Project))
	}}
}

// serverMetadata is a server's metadata as its own resource: GET .../metadata answers {"metadata": {...}}.
func (s *nova) serverMetadata(c *call) (int, any, error) {
	r := resource[*server]{key: "metadata", find: s.getServerLocked, view: func(_ *call, v *server) any {
		if v.Metadata == nil {
			return map[string]string{}
		}
		return v.Metadata
	}}
	return show(s.cloud, c, r, c.r.PathValue("id"))
}

// serverTags is a server's tags as its own resource: GET .../tags answers {"tags": [...]}.
func (s *nova) serverTags(c *call) (int, any, error) {
	r := resource[*server]{key: "tags", find: s.getServerLocked, view: func(_ *call, v *server) any { return orEmpty(v.Tags) }}
	return show(s.cloud, c, r, c.r.PathValue("id"))
}

func (s *nova) getServer(c *call) (int, any, error) {
	return show(s.cloud, c, s.servers(), c.r.PathValue("id"))
}

// changeServer applies f to the server of the path under the lock (a change Nova makes at once).
func (s *nova) changeServer(c *call, f func(*server) (int, any, error)) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.getServerLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	status, body, err := f(v)
	if err == nil {
		v.Updated = s.now()
	}
	return status, body, err
}

// detachVolume answers DELETE .../os-volume_attachments/{volume}: the volume is detached at once.
func (s *nova) detachVolume(c *call) (int, any, error) {
	return s.changeServer(c, func(v *server) (int, any, error) {
		vid := c.r.PathValue("volume")
		vol, ok := s.st.volumes.get(vid)
		if !ok || vol.AttachedTo != v.ID {
			return 0, nil, errf(http.StatusNotFound, "itemNotFound", "volume_id not found: %s", vid)
		}
		vol.AttachedTo, vol.Status, vol.Updated = "", "available", s.now()
		return http.StatusAccepted, nil, nil
	})
}

// updateServerMetadata answers POST .../metadata: the body's items merged into the server's metadata.
func (s *nova) updateServerMetadata(c *call) (int, any, error) {
	var b struct {
		Metadata map[string]string `json:"metadata"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if b.Metadata == nil {
		return 0, nil, badRequest("Invalid input for field/attribute metadata. 'metadata' is a required property")
	}
	return s.changeServer(c, func(v *server) (int, any, error) {
		md := maps.Clone(v.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		maps.Copy(md, b.Metadata)
		v.Metadata = md
		return http.StatusOK, map[string]any{"metadata": md}, nil
	})
}

// maxServerTags is Nova's limit of tags per server.
const maxServerTags = 50

func (s *nova) addServerTag(c *call) (int, any, error) {
	tag := c.r.PathValue("tag")
	if tag == "" || len(tag) > 60 || strings.ContainsAny(tag, ",/") {
		return 0, nil, badRequest("Tag %q is invalid: tags are 1 to 60 characters without ',' or '/'.", tag)
	}
	return s.changeServer(c, func(v *server) (int, any, error) {
		if slices.Contains(v.Tags, tag) {
			return http.StatusNoContent, nil, nil
		}
		if len(v.Tags) >= maxServerTags {
			return 0, nil, badRequest("The number of tags exceeded the per-server limit %d", maxServerTags)
		}
		v.Tags = append(slices.Clone(v.Tags), tag)
		return http.StatusCreated, nil, nil
	})
}

// checkServerTag answers GET .../tags/{tag}: 204 when the server has the tag, 404 otherwise.
func (s *nova) checkServerTag(c *call) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, err := s.getServerLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if tag := c.r.PathValue("tag"); !slices.Contains(v.Tags, tag) {
		return 0, nil, errf(http.StatusNotFound, "itemNotFound", "Tag %s could not be found for server %s.", tag, v.ID)
	}
	return http.StatusNoContent, nil, nil
}

func (s *nova) removeServerTag(c *call) (int, any, error) {
	tag := c.r.PathValue("tag")
	return s.changeServer(c, func(v *server) (int, any, error) {
		i := slices.Index(v.Tags, tag)
		if i < 0 {
			return 0, nil, errf(http.StatusNotFound, "itemNotFound", "Tag %s could not be found for server %s.", tag, v.ID)
		}
		v.Tags = slices.Delete(slices.Clone(v.Tags), i, i+1)
		return http.StatusNoContent, nil, nil
	})
}

// findGroupLocked finds a project's security group by ID or name.
func (s *cloud) findGroupLocked(project, ref string) *secGroup {
	if g, ok := s.st.secGroups.get(ref); ok && g.Project == project {
		return g
	}
	for _, id := range s.st.secGroups.ids(project) {
		if g := s.st.secGroups.m[id]; g.Name == ref {
			return g
		}
	}
	return nil
}

func (s *nova) createServer(c *call) (int, any, error) {
	var b struct {
		Server *struct {
			Name           string            `json:"name"`
			ImageRef       string            `json:"imageRef"`
			FlavorRef      string            `json:"flavorRef"`
			Metadata       map[string]string `json:"metadata"`
			Networks       any               `json:"networks"`
			Tags           []string          `json:"tags"`
			SecurityGroups []struct {
				Name string `json:"name"`
			} `json:"security_groups"`
		} `json:"server"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	sb := b.Server
	if sb == nil {
		return 0, nil, badRequest("Invalid input for field/attribute server. Value: None. None is not of type 'object'")
	}
	if strings.TrimSpace(sb.Name) == "" {
		return 0, nil, badRequest("Invalid input for field/attribute name. Value: %q. 'name' is a required property", sb.Name)
	}
	if sb.FlavorRef == "" {
		return 0, nil, badRequest("Invalid input for field/attribute flavorRef. 'flavorRef' is a required property")
	}
	type netReq struct{ network, port, ip string }
	var nets []netReq
	auto := false
	switch n := sb.Networks.(type) {
	case nil:
		auto = true
	case string:
		if n == "auto" {
			auto = true
		} else if n != "none" {
			return 0, nil, badRequest("Invalid input for field/attribute networks. Value: %s.", n)
		}
	case []any:
		for _, e := range n {
			m, ok := e.(map[string]any)
			if !ok {
				return 0, nil, badRequest("Invalid input for field/attribute networks. Each entry must be an object.")
			}
			str := func(k string) string { v, _ := m[k].(string); return v }
			nr := netReq{network: str("uuid"), port: str("port"), ip: str("fixed_ip")}
			if nr.network == "" && nr.port == "" {
				return 0, nil, badRequest("Bad networks format: network uuid is not in proper format")
			}
			nets = append(nets, nr)
		}
	default:
		return 0, nil, badRequest("Invalid input for field/attribute networks.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	project := c.project()
	var groups []string
	for _, g := range sb.SecurityGroups {
		sg := s.findGroupLocked(project, g.Name)
		if sg == nil {
			return 0, nil, badRequest("Security group %s not found for project %s.", g.Name, project)
		}
		groups = append(groups, sg.ID)
	}
	if len(sb.SecurityGroups) == 0 {
		if d := s.defaultGroupLocked(project); d != "" {
			groups = []string{d}
		}
	}
	if auto {
		ids := s.st.networks.ids(project)
		if len(ids) > 1 {
			return 0, nil, errf(http.StatusConflict, "conflictingRequest", "Multiple possible networks found, use a Network ID to be more specific.")
		}
		if len(ids) == 1 {
			nets = append(nets, netReq{network: ids[0]})
		}
	}
	now := s.now()
	v := &server{ID: s.newUUID(), Name: sb.Name, Project: project, UserID: c.tok.UserID, Status: "BUILD",
		VMState: "building", TaskState: "spawning", Metadata: sb.Metadata, FlavorID: sb.FlavorRef,
		ImageID: sb.ImageRef, Tags: sb.Tags, Created: now, Updated: now}
	v.act("create", "req-"+s.newUUID(), c.tok.UserID, project, now)
	if len(nets) == 0 {
		v.Groups = groups
	}
	var made []*port
	undo := func() {
		for _, p := range made {
			s.releaseIPsLocked(p)
			s.st.ports.del(p.ID)
		}
	}
	for _, nr := range nets {
		if nr.port != "" {
			p, ok := s.st.ports.get(nr.port)
			if !ok || p.Project != project {
				undo()
				return 0, nil, errf(http.StatusBadRequest, "badRequest", "Port %s could not be found.", nr.port)
			}
			if p.DeviceID != "" {
				undo()
				return 0, nil, errf(http.StatusConflict, "conflictingRequest", "Port %s is still in use.", p.ID)
			}
			p.DeviceID, p.DeviceOwner, p.Status = v.ID, "compute:nova", "ACTIVE"
			v.Ports = append(v.Ports, p.ID)
			continue
		}
		n, ok := s.st.networks.get(nr.network)
		if !ok || !(n.Project == project || n.External) {
			undo()
			return 0, nil, badRequest("Network %s could not be found.", nr.network)
		}
		spec := portSpec{Network: n, Owner: project, DeviceID: v.ID, DeviceOwner: "compute:nova", Groups: groups,
			GroupsSet: true, Status: "ACTIVE"}
		if nr.ip != "" {
			spec.FixedIPs, spec.FixedIPsSet = []fixedIP{{IPAddress: nr.ip}}, true
		}
		p, err := s.createPortLocked(nil, spec)
		if err != nil {
			undo()
			return 0, nil, err
		}
		made = append(made, p)
		v.Ports = append(v.Ports, p.ID)
	}
	s.st.servers.put(v)
	s.later(v, time.Duration(s.knob().ServerBuildLatency))
	var sgs []map[string]string
	for _, g := range s.serverGroupNamesLocked(v) {
		sgs = append(sgs, map[string]string{"name": g})
	}
	return http.StatusAccepted, map[string]any{"server": map[string]any{"id": v.ID, "adminPass": s.newHex(6),
		"OS-DCF:diskConfig": "MANUAL", "security_groups": orEmpty(sgs),
		"links": []map[string]string{{"rel": "self", "href": c.baseURL() + cprefix + "/servers/" + v.ID}}}}, nil
}

// deleteServer answers DELETE: the server in task_state deleting, gone with its ports after the delete latency.
// Nova deletes a server in any state, and a second delete changes nothing.
func (s *nova) deleteServer(c *call) (int, any, error) {
	return removeLater(s.cloud, c, s.servers(), c.r.PathValue("id"), func(v *server) (time.Duration, error) {
		if v.TaskState == "deleting" {
			return asPlanned, nil
		}
		v.TaskState, v.Updated = "deleting", s.now()
		return time.Duration(s.knob().ServerDeleteLatency), nil
	})
}

// settleServer finishes a server's change: a delete removes it, anything else (build, reboot) leaves it ACTIVE.
func (s *cloud) settleServer(v *server) {
	if v.TaskState == "deleting" {
		s.removeServerLocked(v)
		return
	}
	v.Status, v.VMState, v.TaskState, v.Updated = "ACTIVE", "active", "", s.now()
}

// removeServerLocked deletes a server and the ports Nova made for it, and detaches its volumes.
func (s *cloud) removeServerLocked(v *server) {
	for _, pid := range v.Ports {
		if p, ok := s.st.ports.get(pid); ok && p.DeviceID == v.ID {
			s.releaseIPsLocked(p)
			s.disassociateLocked(p)
			s.st.ports.del(pid)
		}
	}
	for _, id := range s.st.volumes.ids(v.Project) {
		if vol := s.st.volumes.m[id]; vol.AttachedTo == v.ID {
			vol.AttachedTo, vol.Status = "", "available"
		}
	}
	s.st.servers.del(v.ID)
}

func (s *nova) serverAction(c *call) (int, any, error) {
	var b map[string]any
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if len(b) != 1 {
		return 0, nil, badRequest("There is no such action: %v", keys(b))
	}
	var action string
	var arg map[string]any
	for k, v := range b {
		action = k
		arg, _ = v.(map[string]any)
	}
	str := func(k string) string { v, _ := arg[k].(string); return v }
	switch action {
	case "addSecurityGroup", "removeSecurityGroup":
		if str("name") == "" {
			return 0, nil, badRequest("Invalid input for field/attribute name. 'name' is a required property")
		}
		if err := s.sleep(c.r.Context(), time.Duration(s.knob().SecurityGroupUpdateLatency)); err != nil {
			return 0, nil, err
		}
	case "os-resetState":
		if !c.admin() {
			return 0, nil, errf(http.StatusForbidden, "forbidden", "Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed.")
		}
		if st := str("state"); st != "error" && st != "active" {
			return 0, nil, badRequest("Invalid input for field/attribute state. Value: %s. '%s' is not one of ['active', 'error']", st, st)
		}
	case "reboot", "os-start", "os-stop":
	default:
		return 0, nil, badRequest("There is no such action: %s", action)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.getServerLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	now := s.now()
	conflict := func() error {
		return errf(http.StatusConflict, "conflictingRequest", "Cannot '%s' instance %s while it is in vm_state %s", action, v.ID, v.VMState)
	}
	if v.TaskState == "deleting" {
		return 0, nil, errf(http.StatusConflict, "conflictingRequest", "Cannot '%s' instance %s while it is in task_state deleting", action, v.ID)
	}
	switch action {
	case "os-resetState":
		// The vm_state set by hand, the task under way dropped with its pending transition (as Nova does).
		v.VMState, v.TaskState, v.Due, v.Updated = str("state"), "", time.Time{}, now
		v.Status = strings.ToUpper(v.VMState)
	case "reboot":
		typ := strings.ToUpper(str("type"))
		if typ != "SOFT" && typ != "HARD" {
			return 0, nil, badRequest("Invalid input for field/attribute type. Value: %s. '%s' is not one of ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft']", str("type"), str("type"))
		}
		if v.VMState == "building" || (typ == "SOFT" && v.VMState != "active") {
			return 0, nil, conflict()
		}
		v.Status, v.TaskState = "REBOOT", "rebooting"
		if typ == "HARD" {
			v.Status, v.TaskState = "HARD_REBOOT", "rebooting_hard"
		}
		if v.VMState == "error" {
			v.Status = "ERROR" // Nova shows a server in vm_state error as ERROR until the hard reboot is done
		}
		v.Updated = now
		v.act("reboot", "req-"+s.newUUID(), c.tok.UserID, c.project(), now)
		s.later(v, time.Duration(s.knob().ServerRebootLatency))
	case "os-stop":
		if v.VMState != "active" || v.TaskState != "" {
			return 0, nil, conflict()
		}
		v.Status, v.VMState, v.Updated = "SHUTOFF", "stopped", now
		v.act("stop", "req-"+s.newUUID(), c.tok.UserID, c.project(), now)
	case "os-start":
		if v.VMState != "stopped" {
			return 0, nil, conflict()
		}
		v.Status, v.VMState, v.Updated = "ACTIVE", "active", now
		v.act("start", "req-"+s.newUUID(), c.tok.UserID, c.project(), now)
	case "addSecurityGroup", "removeSecurityGroup":
		name := str("name")
		sg := s.findGroupLocked(v.Project, name)
		if sg == nil {
			return 0, nil, errf(http.StatusNotFound, "itemNotFound", "Security group %s not found for project %s.", name, v.Project)
		}
		has := slices.Contains(s.serverGroupsLocked(v), sg.ID)
		if action == "addSecurityGroup" && has {
			return 0, nil, badRequest("Security group %s is already associated with the instance %s", name, v.ID)
		}
		if action == "removeSecurityGroup" && !has {
			return 0, nil, badRequest("Security group %s not associated with the instance %s", name, v.ID)
		}
		change := func(groups []string) []string {
			if action == "addSecurityGroup" {
				return append(slices.Clone(groups), sg.ID)
			}
			return slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == sg.ID })
		}
		if len(v.Ports) == 0 {
			v.Groups = change(v.Groups)
		}
		for _, pid := range v.Ports {
			if p, ok := s.st.ports.get(pid); ok {
				p.SecurityGroups = change(p.SecurityGroups)
				p.Revision++
				p.Updated = now
			}
		}
	}
	return http.StatusAccepted, nil, nil
}

func (s *nova) serverSecGroups(c *call) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, err := s.getServerLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	out := []any{}
	for _, g := range s.serverGroupsLocked(v) {
		sg, ok := s.st.secGroups.get(g)
		if !ok {
			continue
		}
		var rules []any
		for _, rid := range sg.Rules {
			r, ok := s.st.sgRules.get(rid)
			if !ok || r.Direction != "ingress" {
				continue
			}
			rule := map[string]any{"id": r.ID, "parent_group_id": sg.ID, "ip_protocol": r.Protocol,
				"from_port": r.PortRangeMin, "to_port": r.PortRangeMax, "group": map[string]any{}, "ip_range": map[string]any{}}
			if r.RemoteIPPrefix != nil {
				rule["ip_range"] = map[string]any{"cidr": *r.RemoteIPPrefix}
			}
			rules = append(rules, rule)
		}
		out = append(out, map[string]any{"id": sg.ID, "name": sg.Name, "description": sg.Description,
			"tenant_id": sg.Project, "rules": orEmpty(rules)})
	}
	return http.StatusOK, map[string]any{"security_groups": out}, nil
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// serverActions lists a server's instance-action log, newest first, as Nova does (a project reader's right).
func (s *nova) serverActions(c *call) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.getServerLocked(c, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	out := make([]map[string]any, 0, len(v.Actions))
	for i := len(v.Actions) - 1; i >= 0; i-- {
		a := v.Actions[i]
		var user, project any // null for the cloud's own action, as Nova shows it
		if a.UserID != "" {
			user = a.UserID
		}
		if a.ProjectID != "" {
			project = a.ProjectID
		}
		out = append(out, map[string]any{"action": a.Action, "instance_uuid": v.ID, "message": nil, "project_id": project,
			"request_id": a.RequestID, "start_time": a.StartTime.UTC().Format("2006-01-02T15:04:05.000000"), "user_id": user})
	}
	return http.StatusOK, map[string]any{"instanceActions": out}, nil
}

package cloudsim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

const nprefix = "/networking/v2.0"

func (s *neutron) routes(mux *http.ServeMux, api apiFunc) {
	h := func(pattern string, fn handlerFunc) { mux.Handle(pattern, api(svcNetwork, true, fn)) }
	mux.Handle("GET /networking/{$}", api(svcNetwork, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"versions": []any{map[string]any{"id": "v2.0", "status": "CURRENT",
			"links": []any{map[string]string{"rel": "self", "href": c.baseURL() + nprefix + "/"}}}}}, nil
	}))
	h("GET "+nprefix+"/{$}", s.neutronResources)
	h("GET "+nprefix, s.neutronResources)
	h("GET "+nprefix+"/extensions", func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"extensions": neutronExtensions()}, nil
	})
	h("GET "+nprefix+"/extensions/{alias}", func(c *call) (int, any, error) {
		for _, e := range neutronExtensions() {
			if e["alias"] == c.r.PathValue("alias") {
				return http.StatusOK, map[string]any{"extension": e}, nil
			}
		}
		return 0, nil, errf(http.StatusNotFound, "HTTPNotFound", "Extension with alias %s does not exist", c.r.PathValue("alias"))
	})

	h("GET "+nprefix+"/networks", s.listNetworks)
	h("POST "+nprefix+"/networks", s.createNetwork)
	h("GET "+nprefix+"/networks/{id}", s.getNetwork)
	h("PUT "+nprefix+"/networks/{id}", s.updateNetwork)
	h("DELETE "+nprefix+"/networks/{id}", s.deleteNetwork)

	h("GET "+nprefix+"/subnets", s.listSubnets)
	h("POST "+nprefix+"/subnets", s.createSubnet)
	h("GET "+nprefix+"/subnets/{id}", s.getSubnet)
	h("DELETE "+nprefix+"/subnets/{id}", s.deleteSubnet)

	h("GET "+nprefix+"/ports", s.listPorts)
	h("POST "+nprefix+"/ports", s.createPort)
	h("GET "+nprefix+"/ports/{id}", s.getPort)
	h("PUT "+nprefix+"/ports/{id}", s.updatePort)
	h("DELETE "+nprefix+"/ports/{id}", s.deletePort)

	h("GET "+nprefix+"/floatingips", s.listFloatingIPs)
	h("POST "+nprefix+"/floatingips", s.createFloatingIP)
	h("GET "+nprefix+"/floatingips/{id}", s.getFloatingIP)
	h("PUT "+nprefix+"/floatingips/{id}", s.updateFloatingIP)
	h("DELETE "+nprefix+"/floatingips/{id}", s.deleteFloatingIP)

	h("GET "+nprefix+"/security-groups", s.listSecGroups)
	h("POST "+nprefix+"/security-groups", s.createSecGroup)
	h("GET "+nprefix+"/security-groups/{id}", s.getSecGroup)
	h("PUT "+nprefix+"/security-groups/{id}", s.updateSecGroup)
	h("DELETE "+nprefix+"/security-groups/{id}", s.deleteSecGroup)

	h("GET "+nprefix+"/security-group-rules", s.listRules)
	h("POST "+nprefix+"/security-group-rules", s.createRule)
	h("GET "+nprefix+"/security-group-rules/{id}", s.getRule)
	h("DELETE "+nprefix+"/security-group-rules/{id}", s.deleteRule)

	h("GET "+nprefix+"/routers", s.listRouters)
	h("POST "+nprefix+"/routers", s.createRouter)
	h("GET "+nprefix+"/routers/{id}", s.getRouter)
	h("PUT "+nprefix+"/routers/{id}", s.updateRouter)
	h("DELETE "+nprefix+"/routers/{id}", s.deleteRouter)
	h("PUT "+nprefix+"/routers/{id}/add_extraroutes", s.addExtraRoutes)
	h("PUT "+nprefix+"/routers/{id}/remove_extraroutes", s.removeExtraRoutes)
	h("PUT "+nprefix+"/routers/{id}/add_router_interface", s.addRouterInterface)
	h("PUT "+nprefix+"/routers/{id}/remove_router_interface", s.removeRouterInterface)

	h("GET "+nprefix+"/quotas", s.listQuotas)
	h("GET "+nprefix+"/quotas/{project}", s.getQuota)
	h("GET "+nprefix+"/quotas/{project}/{details}", s.getQuotaDetails)
	h("PUT "+nprefix+"/quotas/{project}", s.updateQuota)
	h("DELETE "+nprefix+"/quotas/{project}", s.deleteQuota)

	mux.Handle("/networking/", api(svcNetwork, false, notFound))
}

func (s *neutron) neutronResources(c *call) (int, any, error) {
	var res []any
	for _, r := range [][2]string{{"network", "networks"}, {"subnet", "subnets"}, {"port", "ports"}, {"floatingip", "floatingips"},
		{"security_group", "security-groups"}, {"security_group_rule", "security-group-rules"},
		{"router", "routers"}, {"quota", "quotas"}} {
		res = append(res, map[string]any{"name": r[0], "collection": r[1],
			"links": []any{map[string]string{"rel": "self", "href": c.baseURL() + nprefix + "/" + r[1]}}})
	}
	return http.StatusOK, map[string]any{"resources": res}, nil
}

func neutronExtensions() []map[string]any {
	ext := [][3]string{
		{"router", "Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 Neutron networks and access to external networks via a NAT gateway."},
		{"extraroute", "Neutron Extra Route", "Extra routes configuration for L3 router"},
		{"extraroute-atomic", "Atomically add/remove extra routes", "Edit extra routes of a router on server side by atomically adding/removing extra routes"},
		{"standard-attr-revisions", "Resource revision numbers", "This extension will display the revision number of neutron resources."},
		{"revision-if-match", "If-Match constraints based on revision_number", "Extension indicating that If-Match based on revision_number is supported."},
		{"quotas", "Quota management support", "Expose functions for quotas management per project"},
		{"quota_details", "Quota details management support", "Expose functions for quotas usage statistics per project"},
		{"security-group", "security-group", "The security groups extension."},
		{"allowed-address-pairs", "Allowed Address Pairs", "Provides allowed address pairs"},
		{"external-net", "Neutron external network", "Adds external network attribute to network resource."},
		{"standard-attr-tag", "Tag support for resources with standard attribute: subnet, trunk, network_segment_range, router, network, policy, subnetpool, port, security_group, floatingip", "Enables to set tag on resources with standard attribute."},
		{"standard-attr-timestamp", "Resource timestamps", "Adds created_at and updated_at fields to all Neutron resources that have Neutron standard attributes."},
		{"standard-attr-description", "standard-attr-description", "Extension to add descriptions to standard attributes"},
		{"project-id", "project_id field enabled", "Extension that indicates that project_id field is enabled."},
		{"pagination", "Pagination support", "Extension that indicates that pagination is enabled."},
		{"sorting", "Sorting support", "Extension that indicates that sorting is enabled."},
	}
	out := make([]map[string]any, 0, len(ext))
	for _, e := range ext {
		out = append(out, map[string]any{"alias": e[0], "name": e[1], "description": e[2],
			"updated": "2013-02-03T10:00:00-00:00", "links": []any{}})
	}
	return out
}

// neutronScope is the project whose index a list walks: the caller's, or for an admin the one
// asked for with project_id/tenant_id, or all ("").
func (c *call) neutronScope() string {
	if !c.admin() {
		return c.project()
	}
	q := c.values()
	if v := q["project_id"]; len(v) == 1 {
		return v[0]
	}
	if v := q["tenant_id"]; len(v) == 1 {
		return v[0]
	}
	return ""
}

func (c *call) visible(owner string) bool { return c.admin() || owner == c.project() }

// ownerFor is the project a created resource belongs to.
func (c *call) ownerFor(projectID, tenantID string) (string, error) {
	p := projectID
	if p == "" {
		p = tenantID
	}
	if p == "" || p == c.project() {
		return c.project(), nil
	}
	if !c.admin() {
		return "", errf(http.StatusForbidden, "HTTPForbidden", "Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges")
	}
	if !c.s.id.hasProject(p) {
		return "", badRequest("Invalid input for operation: project %s does not exist.", p)
	}
	return p, nil
}

// ifMatch enforces Neutron's If-Match: revision_number=N.
func (c *call) ifMatch(current int) error {
	h := c.r.Header.Get("If-Match")
	if h == "" {
		return nil
	}
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		v, ok := strings.CutPrefix(part, "revision_number=")
		if !ok {
			return badRequest("Invalid If-Match header %q: expected revision_number=N", h)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return badRequest("Invalid If-Match header %q: expected revision_number=N", h)
		}
		if n != current {
			return errf(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
				"Constrained to %d, but current revision is %d", n, current)
		}
	}
	return nil
}

func neutronList[T item](c *call, coll *coll[T], key string, field func(T, string) ([]string, bool), view func(T) any) (int, any, error) {
	limit, err := c.limit(0)
	if err != nil {
		return 0, nil, err
	}
	q := c.values()
	status, body, err := index(c.s.cloud, c, coll, key, c.neutronScope(), limit, func(v T) bool {
		if !c.visible(v.owner()) {
			return false
		}
		return matchFilters(q, func(k string) ([]string, bool) { return field(v, k) })
	}, plain(view))
	if err != nil {
		return 0, nil, err
	}
	if fields := q["fields"]; len(fields) > 0 {
		m := body.(map[string]any)
		if m[key], err = selectFields(m[key].([]any), fields); err != nil {
			return 0, nil, err
		}
	}
	return status, body, nil
}

func commonField(k, id, name, project string, tags []string, revision int) ([]string, bool) {
	switch k {
	case "id":
		return []string{id}, true
	case "name":
		return []string{name}, true
	case "project_id", "tenant_id":
		return []string{project}, true
	case "tags":
		return tags, true
	case "revision_number":
		return []string{strconv.Itoa(revision)}, true
	}
	return nil, false
}

// selectFields keeps only the named fields of each view, as Neutron's fields= parameter does.
func selectFields(views []any, fields []string) ([]any, error) {
	keep := map[string]bool{}
	for _, f := range splitComma(fields) {
		keep[f] = true
	}
	out := make([]any, 0, len(views))
	for _, v := range views {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		for k := range m {
			if !keep[k] {
				delete(m, k)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

package openstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/common/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
)

func routerFrom(r *routers.Router) *Router {
	out := &Router{ID: r.ID, Name: r.Name, ProjectID: r.ProjectID, Status: r.Status, RevisionNumber: r.RevisionNumber,
		Routes: make([]Route, 0, len(r.Routes))}
	for _, rt := range r.Routes {
		out.Routes = append(out.Routes, Route{Destination: rt.DestinationCIDR, NextHop: rt.NextHop})
	}
	return out
}

func toGCRoutes(rs []Route) *[]routers.Route {
	out := make([]routers.Route, 0, len(rs))
	for _, r := range rs {
		out = append(out, routers.Route{DestinationCIDR: r.Destination, NextHop: r.NextHop})
	}
	return &out
}

// GetRouter reads one router.
func (c *Cloud) GetRouter(ctx context.Context, id string) (*Router, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("get router %s: %w", id, Classify(err))
	}
	r, err := routers.Get(ctx, nc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get router %s: %w", id, Classify(err))
	}
	return routerFrom(r), nil
}

// ListRouters lists every router matching opts (Name, ProjectID, Tags), all pages.
func (c *Cloud) ListRouters(ctx context.Context, opts ListOpts) ([]Router, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("list routers: %w", Classify(err))
	}
	if err := opts.only("routers", "Name", "ProjectID", "Tags"); err != nil {
		return nil, err
	}
	lo := routers.ListOpts{Name: opts.Name, ProjectID: opts.ProjectID, Tags: strings.Join(opts.Tags, ","), Limit: opts.PageSize}
	pages, err := routers.List(nc, lo).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list routers%s: %w", opts.describe(), Classify(err))
	}
	rs, err := routers.ExtractRouters(pages)
	if err != nil {
		return nil, fmt.Errorf("list routers%s: decode: %w", opts.describe(), Classify(err))
	}
	out := make([]Router, 0, len(rs))
	for i := range rs {
		out = append(out, *routerFrom(&rs[i]))
	}
	return out, nil
}

// AtomicRoutes reports whether Neutron offers extraroute-atomic. The extension list is read once
// per Cloud (a failed read is not cached).
func (c *Cloud) AtomicRoutes(ctx context.Context) (bool, error) {
	return c.HasNetworkExtension(ctx, "extraroute-atomic")
}

// HasNetworkExtension reports whether Neutron offers the extension with this alias (e.g.
// "extraroute", "quota_details"). The extension list is read once per Cloud.
func (c *Cloud) HasNetworkExtension(ctx context.Context, alias string) (bool, error) {
	exts, err := c.networkExtensions(ctx)
	if err != nil {
		return false, err
	}
	return exts[alias], nil
}

func (c *Cloud) networkExtensions(ctx context.Context) (map[string]bool, error) {
	c.extMu.Lock()
	defer c.extMu.Unlock()
	if c.extensions != nil {
		return c.extensions, nil
	}
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("list network extensions: %w", Classify(err))
	}
	pages, err := extensions.List(nc).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list network extensions: %w", Classify(err))
	}
	exts, err := extensions.ExtractExtensions(pages)
	if err != nil {
		return nil, fmt.Errorf("list network extensions: decode: %w", Classify(err))
	}
	m := make(map[string]bool, len(exts))
	for _, e := range exts {
		m[e.Alias] = true
	}
	c.extensions = m
	return m, nil
}

// RemoveRoutes removes exactly these routes (remove_extraroutes); routes absent already are fine.
func (c *Cloud) RemoveRoutes(ctx context.Context, routerID string, routes []Route) (*Router, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("remove %d routes from router %s: %w", len(routes), routerID, Classify(err))
	}
	r, err := extraroutes.Remove(ctx, nc, routerID, extraroutes.Opts{Routes: toGCRoutes(routes)}).Extract()
	if err != nil {
		return nil, fmt.Errorf("remove %d routes from router %s: %w", len(routes), routerID, Classify(err))
	}
	return routerFrom(r), nil
}

// AddRoutes adds routes (add_extraroutes); routes present already are fine.
func (c *Cloud) AddRoutes(ctx context.Context, routerID string, routes []Route) (*Router, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("add %d routes to router %s: %w", len(routes), routerID, Classify(err))
	}
	r, err := extraroutes.Add(ctx, nc, routerID, extraroutes.Opts{Routes: toGCRoutes(routes)}).Extract()
	if err != nil {
		return nil, fmt.Errorf("add %d routes to router %s: %w", len(routes), routerID, Classify(err))
	}
	return routerFrom(r), nil
}

// SetRoutes replaces the route list with If-Match: revision_number=revision. A router changed since
// that revision answers 412, which IsConflict recognises.
func (c *Cloud) SetRoutes(ctx context.Context, routerID string, routes []Route, revision int) (*Router, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("set routes of router %s: %w", routerID, Classify(err))
	}
	rev := revision
	r, err := routers.Update(ctx, nc, routerID, routers.UpdateOpts{Routes: toGCRoutes(routes), RevisionNumber: &rev}).Extract()
	if err != nil {
		return nil, fmt.Errorf("set %d routes of router %s at revision %d: %w", len(routes), routerID, revision, Classify(err))
	}
	return routerFrom(r), nil
}

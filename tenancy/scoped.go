package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/openstack"
)

// scoped is a Cloud limited to one project and one proven router: every list asks for the project
// only and fails when an item of another project comes back; every write first proves that its
// object is the project's. A controller holding a Scope cannot act outside it, by mistake or because
// a spec pointed it elsewhere. Every write is then sent through the fence of its context
// (fencing.Enter, right after the proof): without one, or refused by it, nothing is sent.
type scoped struct {
	conn    Connection
	project string
	router  string
}

var _ Cloud = (*scoped)(nil)

func (s *scoped) foreign(kind, id string) error {
	return &Refusal{Reason: ReasonForeignResource, Message: fmt.Sprintf("%s %s is not in project %s", kind, id, s.project)}
}

// fenced sends one write through the fence of ctx, immediately before it goes out.
func fenced[T any](ctx context.Context, write func(context.Context) (T, error)) (T, error) {
	wctx, cancel, err := fencing.Enter(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer cancel()
	v, err := write(wctx)
	return v, fencing.Explain(wctx, err)
}

func fencedErr(ctx context.Context, write func(context.Context) error) error {
	_, err := fenced(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, write(ctx) })
	return err
}

// opts limits a list to the project; a list asked for another project is refused.
func (s *scoped) opts(kind string, o openstack.ListOpts) (openstack.ListOpts, error) {
	if o.ProjectID != "" && o.ProjectID != s.project {
		return o, &Refusal{Reason: ReasonForeignProject, Message: fmt.Sprintf("list %s of project %s: the cluster acts in project %s only", kind, o.ProjectID, s.project)}
	}
	o.ProjectID = s.project
	return o, nil
}

// own fails unless every item carries the project.
func own[T any](s *scoped, kind string, items []T, id, project func(*T) string) error {
	for i := range items {
		if project(&items[i]) != s.project {
			return s.foreign(kind, id(&items[i]))
		}
	}
	return nil
}

// Routers: only the proven router is written.

func (s *scoped) GetRouter(ctx context.Context, id string) (*openstack.Router, error) {
	r, err := s.conn.GetRouter(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.ProjectID != s.project {
		return nil, s.foreign("router", id)
	}
	return r, nil
}

func (s *scoped) ListRouters(ctx context.Context, o openstack.ListOpts) ([]openstack.Router, error) {
	o, err := s.opts("routers", o)
	if err != nil {
		return nil, err
	}
	rs, err := s.conn.ListRouters(ctx, o)
	if err != nil {
		return nil, err
	}
	return rs, own(s, "router", rs, func(r *openstack.Router) string { return r.ID }, func(r *openstack.Router) string { return r.ProjectID })
}

func (s *scoped) AtomicRoutes(ctx context.Context) (bool, error) { return s.conn.AtomicRoutes(ctx) }

func (s *scoped) writableRouter(id string) error {
	if s.router == "" || id != s.router {
		return &Refusal{Reason: ReasonForeignResource, Message: fmt.Sprintf("router %s is not the cluster's proven router", id)}
	}
	return nil
}

func (s *scoped) RemoveRoutes(ctx context.Context, routerID string, routes []openstack.Route) (*openstack.Router, error) {
	if err := s.writableRouter(routerID); err != nil {
		return nil, err
	}
	return fenced(ctx, func(ctx context.Context) (*openstack.Router, error) {
		return s.conn.RemoveRoutes(ctx, routerID, routes)
	})
}

func (s *scoped) AddRoutes(ctx context.Context, routerID string, routes []openstack.Route) (*openstack.Router, error) {
	if err := s.writableRouter(routerID); err != nil {
		return nil, err
	}
	return fenced(ctx, func(ctx context.Context) (*openstack.Router, error) { return s.conn.AddRoutes(ctx, routerID, routes) })
}

func (s *scoped) SetRoutes(ctx context.Context, routerID string, routes []openstack.Route, revision int) (*openstack.Router, error) {
	if err := s.writableRouter(routerID); err != nil {
		return nil, err
	}
	return fenced(ctx, func(ctx context.Context) (*openstack.Router, error) {
		return s.conn.SetRoutes(ctx, routerID, routes, revision)
	})
}

// Ports.

func (s *scoped) ListPorts(ctx context.Context, o openstack.ListOpts) ([]openstack.Port, error) {
	o, err := s.opts("ports", o)
	if err != nil {
		return nil, err
	}
	ps, err := s.conn.ListPorts(ctx, o)
	if err != nil {
		return nil, err
	}
	return ps, own(s, "port", ps, func(p *openstack.Port) string { return p.ID }, func(p *openstack.Port) string { return p.ProjectID })
}

func (s *scoped) SetAllowedAddressPairs(ctx context.Context, portID string, revision int, pairs []openstack.AddressPair) (*openstack.Port, error) {
	ps, err := s.ListPorts(ctx, openstack.ListOpts{})
	if err != nil {
		return nil, fmt.Errorf("prove port %s is the project's: %w", portID, err)
	}
	if !slices.ContainsFunc(ps, func(p openstack.Port) bool { return p.ID == portID }) {
		return nil, s.foreign("port", portID)
	}
	return fenced(ctx, func(ctx context.Context) (*openstack.Port, error) {
		return s.conn.SetAllowedAddressPairs(ctx, portID, revision, pairs)
	})
}

func (s *scoped) GetPort(ctx context.Context, id string) (*openstack.Port, error) {
	p, err := s.conn.GetPort(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.ProjectID != s.project {
		return nil, s.foreign("port", id)
	}
	return p, nil
}

// DeletePort deletes a port the project's, read right before; never one of Neutron's own (device
// owner network:*: router interfaces and gateways, DHCP, floating IPs), which go with their owner.
func (s *scoped) DeletePort(ctx context.Context, id string) error {
	p, err := s.GetPort(ctx, id)
	if err != nil {
		return err
	}
	if strings.HasPrefix(p.DeviceOwner, "network:") {
		return &Refusal{Reason: ReasonForeignResource, Message: fmt.Sprintf("port %s is Neutron's own (device owner %s)", id, p.DeviceOwner)}
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.DeletePort(ctx, id) })
}

// Floating IPs.

func (s *scoped) ListFloatingIPs(ctx context.Context, o openstack.ListOpts) ([]openstack.FloatingIP, error) {
	o, err := s.opts("floating IPs", o)
	if err != nil {
		return nil, err
	}
	fs, err := s.conn.ListFloatingIPs(ctx, o)
	if err != nil {
		return nil, err
	}
	return fs, own(s, "floating IP", fs, func(f *openstack.FloatingIP) string { return f.ID }, func(f *openstack.FloatingIP) string { return f.ProjectID })
}

func (s *scoped) GetFloatingIP(ctx context.Context, id string) (*openstack.FloatingIP, error) {
	f, err := s.conn.GetFloatingIP(ctx, id)
	if err != nil {
		return nil, err
	}
	if f.ProjectID != s.project {
		return nil, s.foreign("floating IP", id)
	}
	return f, nil
}

func (s *scoped) DeleteFloatingIP(ctx context.Context, id string) error {
	if _, err := s.GetFloatingIP(ctx, id); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.DeleteFloatingIP(ctx, id) })
}

// Servers.

func (s *scoped) ListServers(ctx context.Context, o openstack.ListOpts) ([]openstack.Server, error) {
	o, err := s.opts("servers", o)
	if err != nil {
		return nil, err
	}
	ss, err := s.conn.ListServers(ctx, o)
	if err != nil {
		return nil, err
	}
	return ss, own(s, "server", ss, func(v *openstack.Server) string { return v.ID }, func(v *openstack.Server) string { return v.ProjectID })
}

func (s *scoped) GetServer(ctx context.Context, id string) (*openstack.Server, error) {
	v, err := s.conn.GetServer(ctx, id)
	if err != nil {
		return nil, err
	}
	if v.ProjectID != s.project {
		return nil, s.foreign("server", id)
	}
	return v, nil
}

func (s *scoped) RebootServer(ctx context.Context, id string, hard bool) error {
	if _, err := s.GetServer(ctx, id); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.RebootServer(ctx, id, hard) })
}

func (s *scoped) StartServer(ctx context.Context, id string) error {
	if _, err := s.GetServer(ctx, id); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.StartServer(ctx, id) })
}

func (s *scoped) ListServerActions(ctx context.Context, id string) ([]openstack.ServerAction, error) {
	if _, err := s.GetServer(ctx, id); err != nil {
		return nil, err
	}
	return s.conn.ListServerActions(ctx, id)
}

func (s *scoped) DeleteServer(ctx context.Context, id string) error {
	if _, err := s.GetServer(ctx, id); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.DeleteServer(ctx, id) })
}

func (s *scoped) AddSecurityGroup(ctx context.Context, serverID, group string) error {
	if _, err := s.GetServer(ctx, serverID); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.AddSecurityGroup(ctx, serverID, group) })
}

func (s *scoped) RemoveSecurityGroup(ctx context.Context, serverID, group string) error {
	if _, err := s.GetServer(ctx, serverID); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.RemoveSecurityGroup(ctx, serverID, group) })
}

// Security groups.

func (s *scoped) ListSecurityGroups(ctx context.Context, o openstack.ListOpts) ([]openstack.SecurityGroup, error) {
	o, err := s.opts("security groups", o)
	if err != nil {
		return nil, err
	}
	gs, err := s.conn.ListSecurityGroups(ctx, o)
	if err != nil {
		return nil, err
	}
	return gs, own(s, "security group", gs, func(g *openstack.SecurityGroup) string { return g.ID }, func(g *openstack.SecurityGroup) string { return g.ProjectID })
}

func (s *scoped) CreateSecurityGroupRule(ctx context.Context, groupID string, rule openstack.SecurityGroupRule) (*openstack.SecurityGroupRule, error) {
	gs, err := s.ListSecurityGroups(ctx, openstack.ListOpts{})
	if err != nil {
		return nil, fmt.Errorf("prove security group %s is the project's: %w", groupID, err)
	}
	if !slices.ContainsFunc(gs, func(g openstack.SecurityGroup) bool { return g.ID == groupID }) {
		return nil, s.foreign("security group", groupID)
	}
	return fenced(ctx, func(ctx context.Context) (*openstack.SecurityGroupRule, error) {
		return s.conn.CreateSecurityGroupRule(ctx, groupID, rule)
	})
}

func (s *scoped) DeleteSecurityGroupRule(ctx context.Context, ruleID string) error {
	gs, err := s.ListSecurityGroups(ctx, openstack.ListOpts{})
	if err != nil {
		return fmt.Errorf("prove security group rule %s is the project's: %w", ruleID, err)
	}
	if !slices.ContainsFunc(gs, func(g openstack.SecurityGroup) bool {
		return slices.ContainsFunc(g.Rules, func(r openstack.SecurityGroupRule) bool { return r.ID == ruleID })
	}) {
		return s.foreign("security group rule", ruleID)
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.DeleteSecurityGroupRule(ctx, ruleID) })
}

// Volumes. Cinder shows a volume's project to admins only; a volume listed with the project's
// filter and no project shown is the token's project's, which is the cluster's.

func (s *scoped) volumeOwned(v *openstack.Volume) bool {
	return v.ProjectID == s.project || v.ProjectID == "" && s.conn.ProjectID() == s.project
}

func (s *scoped) ListVolumes(ctx context.Context, o openstack.ListOpts) ([]openstack.Volume, error) {
	o, err := s.opts("volumes", o)
	if err != nil {
		return nil, err
	}
	vs, err := s.conn.ListVolumes(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range vs {
		if !s.volumeOwned(&vs[i]) {
			return nil, s.foreign("volume", vs[i].ID)
		}
	}
	return vs, nil
}

func (s *scoped) GetVolume(ctx context.Context, id string) (*openstack.Volume, error) {
	v, err := s.conn.GetVolume(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.volumeOwned(v) {
		return nil, s.foreign("volume", id)
	}
	return v, nil
}

func (s *scoped) DeleteVolume(ctx context.Context, id string, cascade bool) error {
	if _, err := s.GetVolume(ctx, id); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.DeleteVolume(ctx, id, cascade) })
}

// Load balancers.

func (s *scoped) ListLoadBalancers(ctx context.Context, o openstack.ListOpts) ([]openstack.LoadBalancer, error) {
	o, err := s.opts("load balancers", o)
	if err != nil {
		return nil, err
	}
	ls, err := s.conn.ListLoadBalancers(ctx, o)
	if err != nil {
		return nil, err
	}
	return ls, own(s, "load balancer", ls, func(l *openstack.LoadBalancer) string { return l.ID }, func(l *openstack.LoadBalancer) string { return l.ProjectID })
}

func (s *scoped) GetLoadBalancer(ctx context.Context, id string) (*openstack.LoadBalancer, error) {
	l, err := s.conn.GetLoadBalancer(ctx, id)
	if err != nil {
		return nil, err
	}
	if l.ProjectID != s.project {
		return nil, s.foreign("load balancer", id)
	}
	return l, nil
}

func (s *scoped) DeleteLoadBalancer(ctx context.Context, id string, cascade bool) error {
	if _, err := s.GetLoadBalancer(ctx, id); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return s.conn.DeleteLoadBalancer(ctx, id, cascade) })
}

// Quotas: the project's own only.

func (s *scoped) Quotas(ctx context.Context, service openstack.Service, projectID string) ([]openstack.Quota, error) {
	if projectID != "" && projectID != s.project {
		return nil, &Refusal{Reason: ReasonForeignProject, Message: fmt.Sprintf("read %s quotas of project %s: the cluster acts in project %s only", service, projectID, s.project)}
	}
	return s.conn.Quotas(ctx, service, s.project)
}

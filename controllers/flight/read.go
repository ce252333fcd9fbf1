package flight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/routes"
	"github.com/vitalsproject/vitals/tenancy"
)

// Snapshot is one complete read of everything the repairs need. It is taken once per pass; a failed or
// partial read leaves no snapshot, and then no repair runs.
type Snapshot struct {
	// Servers of the cluster (see FlightServers), sorted by ID.
	Servers []openstack.Server
	// Ports of the project, and the project's ports by server ID (device_id).
	Ports         []openstack.Port
	PortsByServer map[string][]openstack.Port
	// Live holds every address of a port or server of the project (routegc's notion of a live nexthop).
	Live *routes.Addresses
	// Router is the cluster's router, read in this pass.
	Router *openstack.Router
	// Group is the cluster's security group; nil when GroupProblem says why there is none.
	Group        *openstack.SecurityGroup
	GroupProblem *Problem
	// Nodes of the workload cluster, sorted by name, and the server each names (by providerID).
	Nodes      []corev1.Node
	NodeServer map[string]string
	// ServerNode is the Node of each server that has one.
	ServerNode map[string]*corev1.Node
	// Duplicates are the servers more than one Node names (nodes.Duplicates): no repair acts on them.
	Duplicates map[string][]string
}

// Problem is a condition reason and message.
type Problem struct {
	Reason, Message string
}

// ReadOptions say what a read looks for.
type ReadOptions struct {
	ProjectID, RouterID string
	// NetworkID of the nodes (optional): with no Metadata, servers with a port on it are the cluster's.
	NetworkID string
	// Metadata every server of the cluster carries (optional).
	Metadata map[string]string
	// With neither Metadata nor NetworkID, a server a Node's providerID names is the cluster's; with
	// either, such a server must also match it (see matches).
	// SecurityGroupID or SecurityGroupName of the cluster (ID wins).
	SecurityGroupID, SecurityGroupName string
}

// UnsafeError aborts a pass: the reads look incomplete, so nothing may be repaired.
type UnsafeError struct{ Reason string }

func (e *UnsafeError) Error() string { return "refusing to repair: " + e.Reason }

// Read reads the router, the project's servers and ports, the cluster's security group and the
// workload's Nodes, completely or not at all: any failed list is an error, never an empty list, and a
// read that contradicts itself is an *UnsafeError.
func Read(ctx context.Context, cloud tenancy.Cloud, workload client.Reader, o ReadOptions) (*Snapshot, error) {
	router, err := cloud.GetRouter(ctx, o.RouterID)
	if err != nil {
		return nil, fmt.Errorf("read router %s: %w", o.RouterID, err)
	}
	servers, err := cloud.ListServers(ctx, openstack.ListOpts{ProjectID: o.ProjectID})
	if err != nil {
		return nil, fmt.Errorf("list servers of project %s: %w", o.ProjectID, err)
	}
	ports, err := cloud.ListPorts(ctx, openstack.ListOpts{ProjectID: o.ProjectID})
	if err != nil {
		return nil, fmt.Errorf("list ports of project %s: %w", o.ProjectID, err)
	}
	var nl corev1.NodeList
	if err := workload.List(ctx, &nl); err != nil {
		return nil, fmt.Errorf("list nodes of the workload cluster: %w", err)
	}
	snap := &Snapshot{Router: router, Ports: ports, PortsByServer: map[string][]openstack.Port{}, Live: routes.NewAddresses(),
		NodeServer: map[string]string{}, ServerNode: map[string]*corev1.Node{}}
	if snap.Group, snap.GroupProblem, err = readGroup(ctx, cloud, o); err != nil {
		return nil, err
	}
	for _, p := range ports {
		owner := "port " + p.ID
		for _, ip := range p.FixedIPs {
			snap.Live.Add(ip.IPAddress, owner)
		}
		for _, pair := range p.AllowedAddressPairs {
			snap.Live.Add(pair.IPAddress, owner+" allowed address pair")
		}
		if p.DeviceID != "" {
			snap.PortsByServer[p.DeviceID] = append(snap.PortsByServer[p.DeviceID], p)
		}
	}
	for _, sv := range servers {
		for _, a := range sv.Addresses {
			snap.Live.Add(a.Addr, "server "+sv.Name)
		}
	}
	snap.Nodes = slices.Clone(nl.Items)
	slices.SortFunc(snap.Nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range snap.Nodes {
		if id := nodes.ServerID(n.Spec.ProviderID); id != "" {
			snap.NodeServer[n.Name] = id
		}
	}
	snap.Duplicates = nodes.Duplicates(snap.Nodes)
	named := map[string]bool{}
	for _, id := range snap.NodeServer {
		named[id] = true
	}
	// A server a Node names is checked for a truncated port list too, even when it is not the cluster's:
	// a named server's port missing from the list would otherwise drop it from the cluster unnoticed.
	var checked []openstack.Server
	for _, sv := range servers {
		mine := o.matches(sv, snap.PortsByServer[sv.ID], named[sv.ID])
		if mine {
			snap.Servers = append(snap.Servers, sv)
		}
		if mine || named[sv.ID] {
			checked = append(checked, sv)
		}
	}
	slices.SortFunc(snap.Servers, func(a, b openstack.Server) int { return strings.Compare(a.ID, b.ID) })
	for i := range snap.Nodes {
		if id, ok := snap.NodeServer[snap.Nodes[i].Name]; ok {
			snap.ServerNode[id] = &snap.Nodes[i]
		}
	}
	if err := snap.consistent(len(servers), checked); err != nil {
		return nil, err
	}
	return snap, nil
}

// matches reports whether a server of the project is the cluster's: by its metadata or, without
// metadata to match, by a port on the nodes' network. A Node naming the server (named) is no proof
// of its own when either rule is set: whoever may create or update Nodes in the workload cluster
// (kubelets, or anyone granted nodes create/update there) writes providerIDs, and would otherwise pull
// another cluster's server of the same project into flight's reboots and deletes. With neither rule,
// the Node's word is all there is, and it is taken (docs/operator.md says the risk).
func (o ReadOptions) matches(sv openstack.Server, ports []openstack.Port, named bool) bool {
	if len(o.Metadata) == 0 && o.NetworkID == "" {
		return named
	}
	if len(o.Metadata) > 0 {
		for k, v := range o.Metadata {
			if got, ok := sv.Metadata[k]; !ok || got != v {
				return false
			}
		}
		return true
	}
	return o.NetworkID != "" && slices.ContainsFunc(ports, func(p openstack.Port) bool { return p.NetworkID == o.NetworkID })
}

// consistent refuses reads that contradict themselves, the marks of a truncated list: Nodes name
// servers but the project lists none; an ACTIVE server with addresses (of the cluster's, or one a
// Node names) has no port.
func (s *Snapshot) consistent(projectServers int, checked []openstack.Server) error {
	if len(s.NodeServer) > 0 && projectServers == 0 {
		return &UnsafeError{Reason: fmt.Sprintf("%d nodes name OpenStack servers, but the project lists no server", len(s.NodeServer))}
	}
	for _, sv := range checked {
		if sv.Status == "ACTIVE" && len(sv.Addresses) > 0 && len(s.PortsByServer[sv.ID]) == 0 {
			return &UnsafeError{Reason: fmt.Sprintf("server %s is ACTIVE with addresses, but the project lists no port of it", sv.ID)}
		}
	}
	return nil
}

// readGroup finds the cluster's security group: by ID, or exactly one match by name. Zero or several
// matches are a Problem (never a guess); a failed list is an error.
func readGroup(ctx context.Context, cloud tenancy.Cloud, o ReadOptions) (*openstack.SecurityGroup, *Problem, error) {
	switch {
	case o.SecurityGroupID != "":
		gs, err := cloud.ListSecurityGroups(ctx, openstack.ListOpts{ProjectID: o.ProjectID})
		if err != nil {
			return nil, nil, fmt.Errorf("list security groups of project %s: %w", o.ProjectID, err)
		}
		for i := range gs {
			if gs[i].ID == o.SecurityGroupID {
				return &gs[i], nil, nil
			}
		}
		return nil, &Problem{Reason: "SecurityGroupNotFound", Message: fmt.Sprintf("spec.openstack.securityGroupID %s is no security group of project %s", o.SecurityGroupID, o.ProjectID)}, nil
	case o.SecurityGroupName != "":
		gs, err := cloud.ListSecurityGroups(ctx, openstack.ListOpts{ProjectID: o.ProjectID, Name: o.SecurityGroupName})
		if err != nil {
			return nil, nil, fmt.Errorf("list security groups named %q of project %s: %w", o.SecurityGroupName, o.ProjectID, err)
		}
		gs = slices.DeleteFunc(gs, func(g openstack.SecurityGroup) bool { return g.Name != o.SecurityGroupName })
		switch len(gs) {
		case 1:
			return &gs[0], nil, nil
		case 0:
			return nil, &Problem{Reason: "SecurityGroupNotFound", Message: fmt.Sprintf("no security group of project %s is named %q", o.ProjectID, o.SecurityGroupName)}, nil
		default:
			ids := make([]string, len(gs))
			for i, g := range gs {
				ids[i] = g.ID
			}
			return nil, &Problem{Reason: "SecurityGroupAmbiguous", Message: fmt.Sprintf("%d security groups of project %s are named %q (%s): set spec.openstack.securityGroupID",
				len(gs), o.ProjectID, o.SecurityGroupName, strings.Join(ids, ", "))}, nil
		}
	}
	return nil, &Problem{Reason: "NoSecurityGroup", Message: "the spec names no security group (spec.openstack.securityGroupID or securityGroupName)"}, nil
}

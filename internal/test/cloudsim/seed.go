package cloudsim

import (
	"fmt"
	"net/netip"
	"slices"
)

// SeedSpec describes projects and their resources to create in one go. Names are the keys
// the result reports IDs by; resources refer to each other by name.
type SeedSpec struct {
	Projects []ProjectSeed `json:"projects"`
}

// ProjectSeed is one project and what it holds.
type ProjectSeed struct {
	Name           string              `json:"name"`
	Users          []UserSeed          `json:"users,omitempty"`
	Networks       []NetworkSeed       `json:"networks,omitempty"`
	SecurityGroups []string            `json:"security_groups,omitempty"`
	Routers        []RouterSeed        `json:"routers,omitempty"`
	Servers        []ServerSeed        `json:"servers,omitempty"`
	Volumes        []VolumeSeed        `json:"volumes,omitempty"`
	LoadBalancers  []LoadBalancerSeed  `json:"load_balancers,omitempty"`
	Quota          map[string]int      `json:"quota,omitempty"`
	AppCredentials []AppCredentialSeed `json:"application_credentials,omitempty"`
}

// UserSeed is a user with a role on the project (admin or member).
type UserSeed struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Admin    bool   `json:"admin,omitempty"`
}

// AppCredentialSeed is an application credential of one of the project's users.
type AppCredentialSeed struct {
	User   string `json:"user"`
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// NetworkSeed is a network with one subnet.
type NetworkSeed struct {
	Name string `json:"name"`
	CIDR string `json:"cidr"`
}

// RouterSeed is a router attached to the subnets of Networks, carrying Routes as they are
// (no validation: seeds may hold what Neutron would refuse today, e.g. more than max_routes).
type RouterSeed struct {
	Name     string   `json:"name"`
	Networks []string `json:"networks,omitempty"`
	Routes   []Route  `json:"routes,omitempty"`
}

// ServerSeed is a server with one port on Network (default: the project's first network).
type ServerSeed struct {
	Name    string `json:"name"`
	Network string `json:"network,omitempty"`
	IP      string `json:"ip,omitempty"`
	// Status is ACTIVE (default), BUILD, SHUTOFF or ERROR.
	Status string `json:"status,omitempty"`
	// SecurityGroups by name; nil gives "default", an empty list none.
	SecurityGroups  []string          `json:"security_groups,omitempty"`
	NoSecurityGroup bool              `json:"no_security_group,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Tags            []string          `json:"tags,omitempty"`
	// AllowedAddressPairs of the server's port.
	AllowedAddressPairs []string `json:"allowed_address_pairs,omitempty"`
	// Host is the compute host the server runs on (default DefaultHost).
	Host string `json:"host,omitempty"`
}

// VolumeSeed is a volume; Status defaults to available, AttachedTo names a server.
type VolumeSeed struct {
	Name       string            `json:"name"`
	Size       int               `json:"size,omitempty"`
	Status     string            `json:"status,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	AttachedTo string            `json:"attached_to,omitempty"`
}

// LoadBalancerSeed is an ACTIVE load balancer with a VIP on Network (default: first network).
type LoadBalancerSeed struct {
	Name      string   `json:"name"`
	Network   string   `json:"network,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Listeners int      `json:"listeners,omitempty"`
	Pools     int      `json:"pools,omitempty"`
}

// Seeded reports the IDs of seeded resources by project name, then by resource name.
type Seeded struct {
	Projects map[string]*SeededProject `json:"projects"`
}

// SeededProject holds the IDs of one seeded project.
type SeededProject struct {
	ID             string            `json:"id"`
	Users          map[string]string `json:"users"`
	AppCredentials map[string]string `json:"application_credentials"`
	Networks       map[string]string `json:"networks"`
	Subnets        map[string]string `json:"subnets"` // by network name
	SecurityGroups map[string]string `json:"security_groups"`
	Routers        map[string]string `json:"routers"`
	Servers        map[string]string `json:"servers"`
	ServerIPs      map[string]string `json:"server_ips"`
	Ports          map[string]string `json:"ports"` // by server name
	Volumes        map[string]string `json:"volumes"`
	LoadBalancers  map[string]string `json:"load_balancers"`
}

// Seed creates the projects and resources of spec. Projects that exist are reused.
func (s *Sim) Seed(spec SeedSpec) (*Seeded, error) {
	out := &Seeded{Projects: map[string]*SeededProject{}}
	for _, ps := range spec.Projects {
		sp, err := s.seedProject(ps)
		if err != nil {
			return out, fmt.Errorf("seed project %s: %w", ps.Name, err)
		}
		out.Projects[ps.Name] = sp
	}
	return out, nil
}

func (s *Sim) seedProject(ps ProjectSeed) (*SeededProject, error) {
	if ps.Name == "" {
		return nil, fmt.Errorf("name: required")
	}
	pid := s.CreateProject(ps.Name)
	sp := &SeededProject{ID: pid, Users: map[string]string{}, AppCredentials: map[string]string{},
		Networks: map[string]string{}, Subnets: map[string]string{}, SecurityGroups: map[string]string{},
		Routers: map[string]string{}, Servers: map[string]string{}, ServerIPs: map[string]string{},
		Ports: map[string]string{}, Volumes: map[string]string{}, LoadBalancers: map[string]string{}}
	for _, u := range ps.Users {
		id, err := s.CreateUser(u.Name, u.Password, u.Admin, pid)
		if err != nil {
			return sp, err
		}
		sp.Users[u.Name] = id
	}
	for _, a := range ps.AppCredentials {
		uid, ok := sp.Users[a.User]
		if !ok {
			return sp, fmt.Errorf("application credential %s: user %s is not a user of this project seed", a.Name, a.User)
		}
		id, err := s.CreateApplicationCredential(uid, pid, a.Name, a.Secret)
		if err != nil {
			return sp, err
		}
		sp.AppCredentials[a.Name] = id
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ps.Quota) > 0 {
		q := s.quotaLocked(pid)
		for k, v := range ps.Quota {
			if !q.set(k, v) {
				return sp, fmt.Errorf("quota: unknown resource %q", k)
			}
		}
		s.st.quotas[pid] = &q
	}
	sp.SecurityGroups["default"] = s.defaultGroupLocked(pid)
	for _, name := range ps.SecurityGroups {
		if g := s.findGroupLocked(pid, name); g != nil {
			sp.SecurityGroups[name] = g.ID
			continue
		}
		sp.SecurityGroups[name] = s.createSecGroupLocked(pid, name, "").ID
	}
	now := s.now()
	netByName := map[string]*network{}
	var firstNet *network
	for _, ns := range ps.Networks {
		n := &network{ID: s.newUUID(), Name: ns.Name, Project: pid, Revision: 1, Created: now, Updated: now}
		s.st.networks.put(n)
		if ns.CIDR != "" {
			sub, err := s.addSubnetLocked(pid, n, ns.Name+"-subnet", ns.CIDR, 0, "", true)
			if err != nil {
				return sp, fmt.Errorf("network %s: %w", ns.Name, err)
			}
			sp.Subnets[ns.Name] = sub.ID
		}
		netByName[ns.Name] = n
		sp.Networks[ns.Name] = n.ID
		if firstNet == nil {
			firstNet = n
		}
	}
	pickNet := func(name string) (*network, error) {
		if name == "" {
			if firstNet == nil {
				return nil, fmt.Errorf("no network seeded for the project")
			}
			return firstNet, nil
		}
		if n, ok := netByName[name]; ok {
			return n, nil
		}
		if n, ok := s.st.networks.get(name); ok {
			return n, nil
		}
		return nil, fmt.Errorf("network %s: not seeded", name)
	}
	for _, rs := range ps.Routers {
		r := s.newRouterLocked(pid)
		r.Name = rs.Name
		s.st.routers.put(r)
		for _, nn := range rs.Networks {
			n, err := pickNet(nn)
			if err != nil {
				return sp, fmt.Errorf("router %s: %w", rs.Name, err)
			}
			for _, sid := range n.Subnets {
				if _, _, err := s.attachLocked(nil, r, sid, ""); err != nil {
					return sp, fmt.Errorf("router %s: %w", rs.Name, err)
				}
			}
		}
		r.Routes = slices.Clone(rs.Routes)
		sp.Routers[rs.Name] = r.ID
	}
	for _, ss := range ps.Servers {
		v, p, err := s.seedServerLocked(pid, ss, pickNet)
		if err != nil {
			return sp, fmt.Errorf("server %s: %w", ss.Name, err)
		}
		sp.Servers[ss.Name] = v.ID
		if p != nil {
			sp.Ports[ss.Name] = p.ID
			if len(p.FixedIPs) > 0 {
				sp.ServerIPs[ss.Name] = p.FixedIPs[0].IPAddress
			}
		}
	}
	for _, vs := range ps.Volumes {
		v := &volume{ID: s.newUUID(), Name: vs.Name, Project: pid, Status: vs.Status, Size: vs.Size,
			Metadata: vs.Metadata, Created: now, Updated: now}
		if v.Status == "" {
			v.Status = "available"
		}
		if v.Size == 0 {
			v.Size = 1
		}
		if vs.AttachedTo != "" {
			sid, ok := sp.Servers[vs.AttachedTo]
			if !ok {
				sid = vs.AttachedTo
			}
			v.AttachedTo, v.Status = sid, "in-use"
		}
		s.st.volumes.put(v)
		sp.Volumes[vs.Name] = v.ID
	}
	for _, ls := range ps.LoadBalancers {
		n, err := pickNet(ls.Network)
		if err != nil {
			return sp, fmt.Errorf("load balancer %s: %w", ls.Name, err)
		}
		v, err := s.addLBLocked(nil, pid, lbSpec{Name: ls.Name, NetworkID: n.ID, Tags: ls.Tags,
			Listeners: ls.Listeners, Pools: ls.Pools, Active: true})
		if err != nil {
			return sp, fmt.Errorf("load balancer %s: %w", ls.Name, err)
		}
		sp.LoadBalancers[ls.Name] = v.ID
	}
	return sp, nil
}

func (s *Sim) seedServerLocked(pid string, ss ServerSeed, pickNet func(string) (*network, error)) (*server, *port, error) {
	now := s.now()
	v := &server{ID: s.newUUID(), Name: ss.Name, Project: pid, Status: "ACTIVE", VMState: "active",
		Metadata: ss.Metadata, Tags: ss.Tags, FlavorID: "m1.small", ImageID: "coreos", Created: now, Updated: now, Host: ss.Host}
	switch ss.Status {
	case "", "ACTIVE":
	case "BUILD":
		v.Status, v.VMState, v.TaskState = "BUILD", "building", "spawning"
	case "SHUTOFF":
		v.Status, v.VMState = "SHUTOFF", "stopped"
	case "ERROR":
		v.Status, v.VMState = "ERROR", "error"
	default:
		return nil, nil, fmt.Errorf("status %q: want ACTIVE, BUILD, SHUTOFF or ERROR", ss.Status)
	}
	var groups []string
	if !ss.NoSecurityGroup {
		names := ss.SecurityGroups
		if len(names) == 0 {
			names = []string{"default"}
		}
		for _, g := range names {
			sg := s.findGroupLocked(pid, g)
			if sg == nil {
				return nil, nil, fmt.Errorf("security group %s: not in project", g)
			}
			groups = append(groups, sg.ID)
		}
	}
	n, err := pickNet(ss.Network)
	if err != nil {
		return nil, nil, err
	}
	spec := portSpec{Network: n, Owner: pid, DeviceID: v.ID, DeviceOwner: "compute:nova", Status: "ACTIVE",
		Groups: groups, GroupsSet: true}
	if ss.IP != "" {
		spec.FixedIPs, spec.FixedIPsSet = []fixedIP{{IPAddress: ss.IP}}, true
	}
	for _, ip := range ss.AllowedAddressPairs {
		spec.Pairs = append(spec.Pairs, addressPair{IPAddress: ip})
	}
	p, err := s.createPortLocked(nil, spec)
	if err != nil {
		return nil, nil, err
	}
	for i := range p.AddressPairs {
		p.AddressPairs[i].MACAddress = p.MAC
	}
	v.Ports = []string{p.ID}
	s.st.servers.put(v)
	return v, p, nil
}

// ClusterSeed describes a Kubernetes cluster on OpenStack as the operator's controllers see
// it: nodes (servers) on one network behind a router whose routes point pod CIDRs at nodes.
type ClusterSeed struct {
	// Project is the project name (created if missing).
	Project string `json:"project"`
	// Name is the cluster name; resources are named after it.
	Name string `json:"name"`
	// NodeCIDR is the node network (default 10.180.0.0/24).
	NodeCIDR string `json:"node_cidr,omitempty"`
	// PodCIDR is the cluster's pod range (default 198.19.0.0/16); node i gets the /24 number i.
	PodCIDR string `json:"pod_cidr,omitempty"`
	// Nodes is the number of servers, each with a live route.
	Nodes int `json:"nodes"`
	// Hosts spreads the nodes over this many compute hosts, node i on host i mod Hosts (default 1: every node
	// on DefaultHost).
	Hosts int `json:"hosts,omitempty"`
	// OrphanedRoutes point pod /24s inside PodCIDR at node-network IPs where no server lives.
	OrphanedRoutes int `json:"orphaned_routes,omitempty"`
	// ForeignRoutes are outside PodCIDR (10.250.N.0/24), pointing at node-network IPs: not the
	// cluster's to touch.
	ForeignRoutes int `json:"foreign_routes,omitempty"`
	// Volumes are PVC-backed volumes with the Cinder CSI cluster metadata.
	Volumes int `json:"volumes,omitempty"`
	// LoadBalancers are Service load balancers named kube_service_<cluster>_default_svcN.
	LoadBalancers int `json:"load_balancers,omitempty"`
}

// SeededCluster reports what SeedCluster made.
type SeededCluster struct {
	ProjectID      string         `json:"project_id"`
	NetworkID      string         `json:"network_id"`
	SubnetID       string         `json:"subnet_id"`
	RouterID       string         `json:"router_id"`
	SecurityGroup  string         `json:"security_group_id"`
	Nodes          []SeededNode   `json:"nodes"`
	LiveRoutes     []Route        `json:"live_routes"`
	OrphanedRoutes []Route        `json:"orphaned_routes"`
	ForeignRoutes  []Route        `json:"foreign_routes"`
	Volumes        []string       `json:"volumes"`
	LoadBalancers  []string       `json:"load_balancers"`
	Seeded         *SeededProject `json:"-"`
}

// SeededNode is one node server.
type SeededNode struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	IP     string `json:"ip"`
	PortID string `json:"port_id"`
}

// SeedCluster seeds a cluster whose router carries live, orphaned and foreign routes.
func (s *Sim) SeedCluster(cs ClusterSeed) (*SeededCluster, error) {
	if cs.Name == "" || cs.Project == "" {
		return nil, fmt.Errorf("seed cluster: name and project are required")
	}
	if cs.NodeCIDR == "" {
		cs.NodeCIDR = "10.180.0.0/24"
	}
	if cs.PodCIDR == "" {
		cs.PodCIDR = "198.19.0.0/16"
	}
	nodeNet, err := netip.ParsePrefix(cs.NodeCIDR)
	if err != nil || !nodeNet.Addr().Is4() {
		return nil, fmt.Errorf("seed cluster %s: node_cidr %q: want an IPv4 CIDR", cs.Name, cs.NodeCIDR)
	}
	podNet, err := netip.ParsePrefix(cs.PodCIDR)
	if err != nil || !podNet.Addr().Is4() || podNet.Bits() > 24 {
		return nil, fmt.Errorf("seed cluster %s: pod_cidr %q: want an IPv4 CIDR of /24 or larger", cs.Name, cs.PodCIDR)
	}
	hosts := 1<<(32-nodeNet.Bits()) - 3
	if cs.Nodes+cs.OrphanedRoutes+cs.ForeignRoutes > hosts {
		return nil, fmt.Errorf("seed cluster %s: node_cidr %s has room for %d addresses", cs.Name, cs.NodeCIDR, hosts)
	}
	slots := 1 << (24 - podNet.Bits())
	if cs.Nodes+cs.OrphanedRoutes > slots {
		return nil, fmt.Errorf("seed cluster %s: pod_cidr %s has room for %d /24s", cs.Name, cs.PodCIDR, slots)
	}
	podSlot := func(i int) string {
		b := podNet.Masked().Addr().As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 + uint32(i)<<8
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}).String() + "/24"
	}
	hostIP := func(i int) string { // i-th address after gateway and the first 9
		a := nodeNet.Masked().Addr()
		for j := 0; j < i+10 && j < hosts; j++ {
			a = a.Next()
		}
		return a.String()
	}
	spec := ProjectSeed{Name: cs.Project,
		Networks: []NetworkSeed{{Name: cs.Name + "-net", CIDR: cs.NodeCIDR}},
		Routers:  []RouterSeed{{Name: cs.Name + "-router", Networks: []string{cs.Name + "-net"}}}}
	out := &SeededCluster{}
	for i := 0; i < cs.Nodes; i++ {
		name := fmt.Sprintf("%s-node-%d", cs.Name, i)
		ip := hostIP(i)
		host := ""
		if cs.Hosts > 1 {
			host = fmt.Sprintf("%s-%d", DefaultHost, i%cs.Hosts)
		}
		spec.Servers = append(spec.Servers, ServerSeed{Name: name, IP: ip, Host: host,
			Metadata: map[string]string{"kubernikus:cluster": cs.Name}, AllowedAddressPairs: []string{podSlot(i)}})
		out.LiveRoutes = append(out.LiveRoutes, Route{Destination: podSlot(i), NextHop: ip})
	}
	for i := 0; i < cs.OrphanedRoutes; i++ {
		out.OrphanedRoutes = append(out.OrphanedRoutes, Route{Destination: podSlot(cs.Nodes + i), NextHop: hostIP(cs.Nodes + i)})
	}
	for i := 0; i < cs.ForeignRoutes; i++ {
		out.ForeignRoutes = append(out.ForeignRoutes, Route{Destination: fmt.Sprintf("10.250.%d.0/24", i),
			NextHop: hostIP(cs.Nodes + cs.OrphanedRoutes + i)})
	}
	routes := slices.Concat(out.LiveRoutes, out.OrphanedRoutes, out.ForeignRoutes)
	spec.Routers[0].Routes = routes
	for i := 0; i < cs.Volumes; i++ {
		spec.Volumes = append(spec.Volumes, VolumeSeed{Name: fmt.Sprintf("pvc-%s-%d", cs.Name, i), Size: 1,
			Metadata: map[string]string{"cinder.csi.openstack.org/cluster": cs.Name,
				"csi.storage.k8s.io/pvc/name": fmt.Sprintf("data-%d", i), "csi.storage.k8s.io/pvc/namespace": "default"}})
	}
	for i := 0; i < cs.LoadBalancers; i++ {
		name := fmt.Sprintf("kube_service_%s_default_svc%d", cs.Name, i)
		spec.LoadBalancers = append(spec.LoadBalancers, LoadBalancerSeed{Name: name, Tags: []string{name}, Listeners: 1, Pools: 1})
	}
	seeded, err := s.Seed(SeedSpec{Projects: []ProjectSeed{spec}})
	if err != nil {
		return nil, fmt.Errorf("seed cluster %s: %w", cs.Name, err)
	}
	sp := seeded.Projects[cs.Project]
	out.Seeded = sp
	out.ProjectID = sp.ID
	out.NetworkID = sp.Networks[cs.Name+"-net"]
	out.SubnetID = sp.Subnets[cs.Name+"-net"]
	out.RouterID = sp.Routers[cs.Name+"-router"]
	out.SecurityGroup = sp.SecurityGroups["default"]
	for _, srv := range spec.Servers {
		out.Nodes = append(out.Nodes, SeededNode{ID: sp.Servers[srv.Name], Name: srv.Name, IP: sp.ServerIPs[srv.Name], PortID: sp.Ports[srv.Name]})
	}
	for _, v := range spec.Volumes {
		out.Volumes = append(out.Volumes, sp.Volumes[v.Name])
	}
	for _, l := range spec.LoadBalancers {
		out.LoadBalancers = append(out.LoadBalancers, sp.LoadBalancers[l.Name])
	}
	return out, nil
}

// Router returns a router's routes and revision, for tests.
func (s *Sim) Router(id string) (routes []Route, revision int, ok bool) {
	s.advance()
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.st.routers.get(id)
	if !ok {
		return nil, 0, false
	}
	return slices.Clone(r.Routes), r.Revision, true
}

// SetRoutes replaces a router's routes without validation (a change made behind the API).
func (s *Sim) SetRoutes(id string, routes []Route) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.st.routers.get(id)
	if !ok {
		return fmt.Errorf("set routes: no router %s", id)
	}
	r.Routes = slices.Clone(routes)
	r.Revision++
	r.Updated = s.now()
	return nil
}

// ServerStatus returns a server's status and task state, for tests.
func (s *Sim) ServerStatus(id string) (status, taskState string, ok bool) {
	s.advance()
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.st.servers.get(id)
	if !ok {
		return "", "", false
	}
	return v.Status, v.TaskState, true
}

// VolumeStatus returns a volume's status, for tests.
func (s *Sim) VolumeStatus(id string) (string, bool) {
	s.advance()
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.st.volumes.get(id)
	if !ok {
		return "", false
	}
	return v.Status, true
}

// LoadBalancerStatus returns a load balancer's provisioning status, for tests.
func (s *Sim) LoadBalancerStatus(id string) (string, bool) {
	s.advance()
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.st.lbs.get(id)
	if !ok {
		return "", false
	}
	return v.ProvisioningStatus, true
}

// SetServerGroups replaces the security groups (by ID) of a server's ports without the API:
// how the flight controller's "default security group missing" case arises.
func (s *Sim) SetServerGroups(serverID string, groupIDs []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.st.servers.get(serverID)
	if !ok {
		return fmt.Errorf("set server groups: no server %s", serverID)
	}
	for _, pid := range v.Ports {
		if p, ok := s.st.ports.get(pid); ok {
			p.SecurityGroups = slices.Clone(groupIDs)
			p.Revision++
		}
	}
	if len(v.Ports) == 0 {
		v.Groups = slices.Clone(groupIDs)
	}
	return nil
}

// Stats counts what the simulator holds.
type Stats struct {
	Projects, Users, Tokens, Networks, Subnets, Ports, SecurityGroups, SecurityGroupRules int
	Routers, Routes, Servers, Volumes, Snapshots, LoadBalancers, PendingTransitions       int
	// Requests counts the API calls served since the simulator started (the admin API aside).
	Requests int64
}

// Stats returns counts of every kind of resource.
func (s *Sim) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.id.mu.RLock()
	st := Stats{Projects: len(s.id.st.projects), Users: len(s.id.st.users), Tokens: len(s.id.st.tokens),
		Networks: len(s.st.networks.m), Subnets: len(s.st.subnets.m), Ports: len(s.st.ports.m),
		SecurityGroups: len(s.st.secGroups.m), SecurityGroupRules: len(s.st.sgRules.m), Routers: len(s.st.routers.m),
		Servers: len(s.st.servers.m), Volumes: len(s.st.volumes.m), Snapshots: len(s.st.snapshots.m), LoadBalancers: len(s.st.lbs.m),
		PendingTransitions: len(s.events), Requests: s.requests.Load()}
	s.id.mu.RUnlock()
	for _, r := range s.st.routers.m {
		st.Routes += len(r.Routes)
	}
	return st
}

// ScaleProject is the project number i of the scale benchmark: user bench-NNNN (password
// "pw") in project bench-NNNN, one network 10.180.0.0/22, a router attached to it whose
// routes point 198.19.j.0/24 at the first routes servers, servers servers and volumes volumes.
func ScaleProject(i, servers, volumes, routes int) ProjectSeed {
	name := fmt.Sprintf("bench-%04d", i)
	ps := ProjectSeed{Name: name, Users: []UserSeed{{Name: name, Password: "pw"}},
		Networks: []NetworkSeed{{Name: "nodes", CIDR: "10.180.0.0/22"}},
		Routers:  []RouterSeed{{Name: "router", Networks: []string{"nodes"}}}}
	for j := 0; j < servers; j++ {
		ip := fmt.Sprintf("10.180.%d.%d", (j+10)/250, (j+10)%250+2)
		ps.Servers = append(ps.Servers, ServerSeed{Name: fmt.Sprintf("node-%d", j), IP: ip,
			Metadata: map[string]string{"cluster": name}})
		if j < routes {
			ps.Routers[0].Routes = append(ps.Routers[0].Routes, Route{Destination: fmt.Sprintf("198.19.%d.0/24", j%256), NextHop: ip})
		}
	}
	for j := 0; j < volumes; j++ {
		ps.Volumes = append(ps.Volumes, VolumeSeed{Name: fmt.Sprintf("pvc-%d", j), Size: 1,
			Metadata: map[string]string{"cinder.csi.openstack.org/cluster": name}})
	}
	return ps
}

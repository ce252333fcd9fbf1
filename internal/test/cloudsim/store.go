package cloudsim

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// item is what every stored resource offers to the collection that holds it.
type item interface {
	key() string
	owner() string
}

// idSet is a set of IDs kept sorted for stable paging. Writers hold the simulator's write lock;
// readers may sort concurrently under its read lock, so sorting has its own mutex.
type idSet struct {
	mu    sync.Mutex
	ids   []string
	dirty bool
}

func (s *idSet) add(id string) {
	if n := len(s.ids); n > 0 && id < s.ids[n-1] {
		s.dirty = true
	}
	s.ids = append(s.ids, id)
}

func (s *idSet) remove(id string) {
	ids := s.sorted()
	i, ok := slices.BinarySearch(ids, id)
	if ok {
		s.ids = slices.Delete(ids, i, i+1)
	}
}

func (s *idSet) sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirty {
		sort.Strings(s.ids)
		s.dirty = false
	}
	return s.ids
}

// coll holds one kind of resource, indexed by ID, globally and per project.
type coll[T item] struct {
	m      map[string]T
	all    *idSet
	byProj map[string]*idSet
}

func newColl[T item]() *coll[T] {
	return &coll[T]{m: map[string]T{}, all: &idSet{}, byProj: map[string]*idSet{}}
}

func (c *coll[T]) put(v T) {
	id := v.key()
	if _, ok := c.m[id]; ok {
		c.m[id] = v
		return
	}
	c.m[id] = v
	c.all.add(id)
	p := c.byProj[v.owner()]
	if p == nil {
		p = &idSet{}
		c.byProj[v.owner()] = p
	}
	p.add(id)
}

func (c *coll[T]) get(id string) (T, bool) {
	v, ok := c.m[id]
	return v, ok
}

func (c *coll[T]) del(id string) {
	v, ok := c.m[id]
	if !ok {
		return
	}
	delete(c.m, id)
	c.all.remove(id)
	if p := c.byProj[v.owner()]; p != nil {
		p.remove(id)
	}
}

// ids returns the sorted IDs of one project, or of all projects when project is empty.
func (c *coll[T]) ids(project string) []string {
	if project == "" {
		return c.all.sorted()
	}
	if p := c.byProj[project]; p != nil {
		return p.sorted()
	}
	return nil
}

func (c *coll[T]) values() []T {
	out := make([]T, 0, len(c.m))
	for _, id := range c.all.sorted() {
		out = append(out, c.m[id])
	}
	return out
}

// pageResult is one page of a list.
type pageResult[T any] struct {
	items []T
	// more is set when the page is full: like the real services, a full page carries a next
	// link even if the next page turns out empty.
	more bool
}

// errBadMarker reports a marker that names no item.
type errBadMarker struct{ marker string }

func (e errBadMarker) Error() string { return "marker [" + e.marker + "] not found" }

// list pages through the sorted IDs of project (all projects when empty), keeping the items
// that match, starting after marker and stopping at limit (0: no limit).
func list[T item](c *coll[T], project, marker string, limit int, match func(T) bool) (pageResult[T], error) {
	ids := c.ids(project)
	start := 0
	if marker != "" {
		i, ok := slices.BinarySearch(ids, marker)
		if !ok {
			if _, exists := c.m[marker]; !exists {
				return pageResult[T]{}, errBadMarker{marker}
			}
		}
		if ok {
			i++
		}
		start = i
	}
	var out []T
	for _, id := range ids[start:] {
		v := c.m[id]
		if match != nil && !match(v) {
			continue
		}
		out = append(out, v)
		if limit > 0 && len(out) == limit {
			return pageResult[T]{items: out, more: true}, nil
		}
	}
	return pageResult[T]{items: out}, nil
}

// Stored resources. Exported fields are the persisted form (see persist.go).

type network struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Project  string    `json:"project_id"`
	Subnets  []string  `json:"subnets"`
	External bool      `json:"external,omitempty"`
	Revision int       `json:"revision_number"`
	Tags     []string  `json:"tags,omitempty"`
	Created  time.Time `json:"created_at"`
	Updated  time.Time `json:"updated_at"`
}

func (v *network) key() string   { return v.ID }
func (v *network) owner() string { return v.Project }

type subnet struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Project   string    `json:"project_id"`
	NetworkID string    `json:"network_id"`
	CIDR      string    `json:"cidr"`
	IPVersion int       `json:"ip_version"`
	GatewayIP string    `json:"gateway_ip"`
	NextHost  int       `json:"next_host"`
	Revision  int       `json:"revision_number"`
	Created   time.Time `json:"created_at"`
	Updated   time.Time `json:"updated_at"`
}

func (v *subnet) key() string   { return v.ID }
func (v *subnet) owner() string { return v.Project }

type port struct {
	ID             string        `json:"id"`
	Name           string        `json:"name"`
	Project        string        `json:"project_id"`
	NetworkID      string        `json:"network_id"`
	DeviceID       string        `json:"device_id"`
	DeviceOwner    string        `json:"device_owner"`
	Status         string        `json:"status"`
	MAC            string        `json:"mac_address"`
	FixedIPs       []fixedIP     `json:"fixed_ips"`
	AddressPairs   []addressPair `json:"allowed_address_pairs"`
	SecurityGroups []string      `json:"security_groups"`
	Revision       int           `json:"revision_number"`
	Tags           []string      `json:"tags,omitempty"`
	Created        time.Time     `json:"created_at"`
	Updated        time.Time     `json:"updated_at"`
}

func (v *port) key() string   { return v.ID }
func (v *port) owner() string { return v.Project }

type fixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

type addressPair struct {
	IPAddress  string `json:"ip_address"`
	MACAddress string `json:"mac_address"`
}

type secGroup struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Project     string    `json:"project_id"`
	Rules       []string  `json:"rules"`
	Revision    int       `json:"revision_number"`
	Tags        []string  `json:"tags,omitempty"`
	Created     time.Time `json:"created_at"`
	Updated     time.Time `json:"updated_at"`
}

func (v *secGroup) key() string   { return v.ID }
func (v *secGroup) owner() string { return v.Project }

type sgRule struct {
	ID             string    `json:"id"`
	Project        string    `json:"project_id"`
	GroupID        string    `json:"security_group_id"`
	Direction      string    `json:"direction"`
	EtherType      string    `json:"ethertype"`
	Protocol       *string   `json:"protocol"`
	PortRangeMin   *int      `json:"port_range_min"`
	PortRangeMax   *int      `json:"port_range_max"`
	RemoteIPPrefix *string   `json:"remote_ip_prefix"`
	RemoteGroupID  *string   `json:"remote_group_id"`
	Description    string    `json:"description"`
	Revision       int       `json:"revision_number"`
	Created        time.Time `json:"created_at"`
	Updated        time.Time `json:"updated_at"`
}

func (v *sgRule) key() string   { return v.ID }
func (v *sgRule) owner() string { return v.Project }

// Route is one static route of a router.
type Route struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

type route = Route

type router struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Project     string    `json:"project_id"`
	Status      string    `json:"status"`
	Routes      []route   `json:"routes"`
	GatewayNet  string    `json:"gateway_network_id,omitempty"`
	Subnets     []string  `json:"subnets"` // subnets attached through router interfaces
	Revision    int       `json:"revision_number"`
	Tags        []string  `json:"tags,omitempty"`
	Created     time.Time `json:"created_at"`
	Updated     time.Time `json:"updated_at"`
}

func (v *router) key() string   { return v.ID }
func (v *router) owner() string { return v.Project }

type server struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Project   string            `json:"project_id"`
	UserID    string            `json:"user_id"`
	Status    string            `json:"status"`
	VMState   string            `json:"vm_state"`
	TaskState string            `json:"task_state,omitempty"`
	Ports     []string          `json:"ports"`
	Metadata  map[string]string `json:"metadata"`
	FlavorID  string            `json:"flavor_id"`
	ImageID   string            `json:"image_id"`
	Created   time.Time         `json:"created"`
	Updated   time.Time         `json:"updated"`
	// Security groups of a server without ports (Nova keeps the request's groups).
	Groups []string `json:"groups,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	// Host is the compute host the server runs on (DefaultHost unless seeded on another); Nova shows each
	// project only hostID(project, host).
	Host string    `json:"host,omitempty"`
	Due  time.Time `json:"due,omitzero"` // when the pending transition happens
	// Actions is the instance-action log, oldest first (Nova's os-instance-actions).
	Actions []serverAction `json:"actions,omitempty"`
}

// serverAction is one entry of a server's instance-action log; UserID is empty for the cloud's own action (the
// power-state sync's stop of a server found off after its host crashed).
type serverAction struct {
	Action    string    `json:"action"`
	RequestID string    `json:"request_id"`
	UserID    string    `json:"user_id,omitempty"`
	ProjectID string    `json:"project_id,omitempty"`
	StartTime time.Time `json:"start_time"`
}

// maxServerActions bounds a server's log in the simulator (Nova keeps them all; tests need the last few).
const maxServerActions = 50

// act records an action in v's log.
func (v *server) act(action, requestID, user, project string, at time.Time) {
	v.Actions = append(v.Actions, serverAction{Action: action, RequestID: requestID, UserID: user, ProjectID: project, StartTime: at})
	if n := len(v.Actions); n > maxServerActions {
		v.Actions = v.Actions[n-maxServerActions:]
	}
}

func (v *server) key() string     { return v.ID }
func (v *server) owner() string   { return v.Project }
func (v *server) due() *time.Time { return &v.Due }
func (v *server) kind() eventKind { return evServer }

type volume struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Project     string            `json:"project_id"`
	UserID      string            `json:"user_id"`
	Status      string            `json:"status"`
	Size        int               `json:"size"`
	VolumeType  string            `json:"volume_type"`
	Metadata    map[string]string `json:"metadata"`
	AttachedTo  string            `json:"attached_to,omitempty"`
	Created     time.Time         `json:"created_at"`
	Updated     time.Time         `json:"updated_at"`
	Due         time.Time         `json:"due,omitzero"`
}

func (v *volume) key() string     { return v.ID }
func (v *volume) owner() string   { return v.Project }
func (v *volume) due() *time.Time { return &v.Due }
func (v *volume) kind() eventKind { return evVolume }

// volumeSnapshot is a Cinder snapshot of a volume.
type volumeSnapshot struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Project     string            `json:"project_id"`
	VolumeID    string            `json:"volume_id"`
	Status      string            `json:"status"`
	Size        int               `json:"size"`
	Metadata    map[string]string `json:"metadata"`
	Created     time.Time         `json:"created_at"`
	Updated     time.Time         `json:"updated_at"`
	Due         time.Time         `json:"due,omitzero"`
}

func (v *volumeSnapshot) key() string     { return v.ID }
func (v *volumeSnapshot) owner() string   { return v.Project }
func (v *volumeSnapshot) due() *time.Time { return &v.Due }
func (v *volumeSnapshot) kind() eventKind { return evSnapshot }

type loadBalancer struct {
	ID                 string       `json:"id"`
	Name               string       `json:"name"`
	Description        string       `json:"description"`
	Project            string       `json:"project_id"`
	ProvisioningStatus string       `json:"provisioning_status"`
	OperatingStatus    string       `json:"operating_status"`
	VIPAddress         string       `json:"vip_address"`
	VIPSubnetID        string       `json:"vip_subnet_id"`
	VIPNetworkID       string       `json:"vip_network_id"`
	VIPPortID          string       `json:"vip_port_id"`
	Listeners          []lbListener `json:"listeners"`
	Pools              []string     `json:"pools"`
	Tags               []string     `json:"tags"`
	Created            time.Time    `json:"created_at"`
	Updated            time.Time    `json:"updated_at"`
	Due                time.Time    `json:"due,omitzero"`
}

func (v *loadBalancer) key() string     { return v.ID }
func (v *loadBalancer) owner() string   { return v.Project }
func (v *loadBalancer) due() *time.Time { return &v.Due }
func (v *loadBalancer) kind() eventKind { return evLB }

type lbListener struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Port     int    `json:"protocol_port"`
}

// quota is a project's Neutron quota.
type quota struct {
	Network           int `json:"network"`
	Subnet            int `json:"subnet"`
	Port              int `json:"port"`
	Router            int `json:"router"`
	SecurityGroup     int `json:"security_group"`
	SecurityGroupRule int `json:"security_group_rule"`
	FloatingIP        int `json:"floatingip"`
}

// set sets the limit of one resource, named as in Neutron's API; it reports whether the name is known.
func (q *quota) set(resource string, v int) bool {
	switch resource {
	case "network":
		q.Network = v
	case "subnet":
		q.Subnet = v
	case "port":
		q.Port = v
	case "router":
		q.Router = v
	case "security_group":
		q.SecurityGroup = v
	case "security_group_rule":
		q.SecurityGroupRule = v
	case "floatingip":
		q.FloatingIP = v
	default:
		return false
	}
	return true
}

func defaultQuota() quota {
	return quota{Network: 100, Subnet: 100, Port: 500, Router: 10, SecurityGroup: 10, SecurityGroupRule: 100, FloatingIP: 50}
}

// state is the resources of the cloud (identity holds projects, users and tokens).
type state struct {
	quotas map[string]*quota

	networks  *coll[*network]
	subnets   *coll[*subnet]
	ports     *coll[*port]
	fips      *coll[*floatingIP]
	secGroups *coll[*secGroup]
	sgRules   *coll[*sgRule]
	routers   *coll[*router]
	servers   *coll[*server]
	volumes   *coll[*volume]
	snapshots *coll[*volumeSnapshot]
	lbs       *coll[*loadBalancer]
}

func newState() *state {
	return &state{
		quotas:    map[string]*quota{},
		networks:  newColl[*network](),
		subnets:   newColl[*subnet](),
		ports:     newColl[*port](),
		fips:      newColl[*floatingIP](),
		secGroups: newColl[*secGroup](),
		sgRules:   newColl[*sgRule](),
		routers:   newColl[*router](),
		servers:   newColl[*server](),
		volumes:   newColl[*volume](),
		snapshots: newColl[*volumeSnapshot](),
		lbs:       newColl[*loadBalancer](),
	}
}

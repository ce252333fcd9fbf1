package openstack

// The small interfaces that controllers and checks use, and the plain types they exchange.
// *Cloud implements all of them against a real cloud; tests may use the simulator behind a real *Cloud.

import (
	"context"
	"time"
)

// Route is one static route of a Neutron router.
type Route struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

// Router is a Neutron router with its routes.
type Router struct {
	ID             string
	Name           string
	ProjectID      string
	Status         string
	Routes         []Route
	RevisionNumber int
}

// Routers reads and changes router routes.
type Routers interface {
	GetRouter(ctx context.Context, id string) (*Router, error)
	ListRouters(ctx context.Context, opts ListOpts) ([]Router, error)
	// AtomicRoutes reports whether Neutron offers extraroute-atomic (add_extraroutes/remove_extraroutes).
	AtomicRoutes(ctx context.Context) (bool, error)
	// RemoveRoutes removes exactly these routes with extraroute-atomic's remove_extraroutes.
	RemoveRoutes(ctx context.Context, routerID string, routes []Route) (*Router, error)
	// AddRoutes adds routes with extraroute-atomic's add_extraroutes.
	AddRoutes(ctx context.Context, routerID string, routes []Route) (*Router, error)
	// SetRoutes replaces the whole route list, only if the router is still at revision (If-Match);
	// a changed router answers a conflict (see IsConflict).
	SetRoutes(ctx context.Context, routerID string, routes []Route, revision int) (*Router, error)
}

// ListOpts narrow a list. Empty fields do not filter.
type ListOpts struct {
	ProjectID string
	Name      string
	NetworkID string
	DeviceID  string
	// DeviceOwner filters ports by their owner (e.g. "Octavia").
	DeviceOwner string
	Tags        []string
	// PageSize asks for pages of this size (0: the service's default). All pages are always read.
	PageSize int
}

// FixedIP is one address of a port.
type FixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

// AddressPair is one allowed address pair of a port.
type AddressPair struct {
	IPAddress  string `json:"ip_address"`
	MACAddress string `json:"mac_address,omitempty"`
}

// Port is a Neutron port.
type Port struct {
	ID                  string
	Name                string
	NetworkID           string
	ProjectID           string
	DeviceID            string
	DeviceOwner         string
	Status              string
	MACAddress          string
	FixedIPs            []FixedIP
	AllowedAddressPairs []AddressPair
	SecurityGroups      []string
	RevisionNumber      int
}

// Ports lists, reads, updates and deletes ports.
type Ports interface {
	ListPorts(ctx context.Context, opts ListOpts) ([]Port, error)
	GetPort(ctx context.Context, id string) (*Port, error)
	// SetAllowedAddressPairs replaces a port's allowed address pairs, only if the port is still at revision
	// (If-Match: a pair another writer, e.g. the cloud controller manager, added since the read is never
	// lost; a port changed since answers 412, which IsConflict recognises). revision 0 writes unconditionally.
	SetAllowedAddressPairs(ctx context.Context, portID string, revision int, pairs []AddressPair) (*Port, error)
	// DeletePort deletes a port (Neutron detaches the floating IPs on it).
	DeletePort(ctx context.Context, id string) error
}

// FloatingIP is a Neutron floating IP.
type FloatingIP struct {
	ID        string
	ProjectID string
	// Address is the floating address; NetworkID the external network it is of.
	Address   string
	NetworkID string
	// PortID is the port it is associated with ("": none); FixedIP that port's address.
	PortID      string
	FixedIP     string
	Status      string
	Description string
}

// FloatingIPs lists, reads and deletes floating IPs.
type FloatingIPs interface {
	ListFloatingIPs(ctx context.Context, opts ListOpts) ([]FloatingIP, error)
	GetFloatingIP(ctx context.Context, id string) (*FloatingIP, error)
	DeleteFloatingIP(ctx context.Context, id string) error
}

// ServerAddress is one address of a server, as Nova reports it.
type ServerAddress struct {
	Network string
	Addr    string
	Version int
	// Type is "fixed" or "floating".
	Type string
	MAC  string
}

// Server is a Nova server.
type Server struct {
	ID        string
	Name      string
	ProjectID string
	Status    string
	VMState   string
	// TaskState is Nova's task in progress ("deleting", "rebooting", ...; "" for none).
	TaskState      string
	Addresses      []ServerAddress
	SecurityGroups []string
	Metadata       map[string]string
	Created        time.Time
	Updated        time.Time
	// HostID is Nova's hostId: an opaque hash of the project and the compute host (the same for two servers
	// of the project on one host, never the host's name); "" while the server has no host.
	HostID string
	// Zone is the server's availability zone (OS-EXT-AZ:availability_zone).
	Zone string
}

// Servers lists and repairs servers.
type Servers interface {
	ListServers(ctx context.Context, opts ListOpts) ([]Server, error)
	GetServer(ctx context.Context, id string) (*Server, error)
	RebootServer(ctx context.Context, id string, hard bool) error
	// StartServer powers on a SHUTOFF server (Nova's os-start).
	StartServer(ctx context.Context, id string) error
	// ListServerActions is the server's instance-action log (Nova's os-instance-actions), oldest first.
	ListServerActions(ctx context.Context, id string) ([]ServerAction, error)
	DeleteServer(ctx context.Context, id string) error
	AddSecurityGroup(ctx context.Context, serverID, group string) error
	RemoveSecurityGroup(ctx context.Context, serverID, group string) error
}

// ServerAction is one entry of a server's instance-action log.
type ServerAction struct {
	// Action is Nova's name of it: create, reboot, stop, start, ...
	Action string
	// UserID asked for it; empty for an action of the cloud itself (Nova's power-state sync stops a server it
	// finds powered off, after a compute host's crash, with no user).
	UserID    string
	RequestID string
	StartTime time.Time
}

// SecurityGroupRule is one rule of a security group.
type SecurityGroupRule struct {
	ID             string
	Direction      string
	EtherType      string
	Protocol       string
	PortRangeMin   int
	PortRangeMax   int
	RemoteIPPrefix string
	RemoteGroupID  string
	Description    string
}

// SecurityGroup is a Neutron security group with its rules.
type SecurityGroup struct {
	ID             string
	Name           string
	Description    string
	ProjectID      string
	Rules          []SecurityGroupRule
	RevisionNumber int
}

// SecurityGroups reads and changes security groups and their rules.
type SecurityGroups interface {
	ListSecurityGroups(ctx context.Context, opts ListOpts) ([]SecurityGroup, error)
	CreateSecurityGroupRule(ctx context.Context, groupID string, rule SecurityGroupRule) (*SecurityGroupRule, error)
	DeleteSecurityGroupRule(ctx context.Context, ruleID string) error
}

// Volume is a Cinder volume.
type Volume struct {
	ID        string
	Name      string
	ProjectID string
	Status    string
	Size      int
	Metadata  map[string]string
	Created   time.Time
}

// Volumes lists and deletes volumes.
type Volumes interface {
	ListVolumes(ctx context.Context, opts ListOpts) ([]Volume, error)
	GetVolume(ctx context.Context, id string) (*Volume, error)
	DeleteVolume(ctx context.Context, id string, cascade bool) error
}

// LoadBalancer is an Octavia load balancer.
type LoadBalancer struct {
	ID                 string
	Name               string
	ProjectID          string
	ProvisioningStatus string
	OperatingStatus    string
	VIPAddress         string
	// VIPPortID is the Neutron port of the VIP (Octavia's own, named octavia-lb-<ID>, unless the
	// load balancer was created on a given port).
	VIPPortID string
	// VIPSubnetID is the subnet of the VIP.
	VIPSubnetID string
	Tags        []string
}

// LoadBalancers lists and deletes load balancers.
type LoadBalancers interface {
	ListLoadBalancers(ctx context.Context, opts ListOpts) ([]LoadBalancer, error)
	GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error)
	// DeleteLoadBalancer deletes, with its listeners and pools when cascade is set.
	DeleteLoadBalancer(ctx context.Context, id string, cascade bool) error
}

// Quota is a project's limit of one resource of a service, and what the project holds of it.
type Quota struct {
	// Resource is the service's own name of it: port, floatingip, security_group_rule (Neutron),
	// volumes, snapshots, gigabytes (Cinder), load_balancer (Octavia).
	Resource string `json:"resource"`
	// Used is what the project holds; Reserved what is being created (it counts as used).
	Used     int `json:"used"`
	Reserved int `json:"reserved"`
	// Limit is the most the project may hold; -1: unlimited.
	Limit int `json:"limit"`
}

// Quotas reads a project's quotas with their use.
type Quotas interface {
	// Quotas reads project's quotas in service (ServiceNetworking, ServiceBlockStorage,
	// ServiceLoadBalancer). A service whose catalog entry is missing answers an error wrapping
	// ErrServiceUnavailable; an API the service lacks answers 404 (IsNotFound), one the
	// credentials may not read 403 (IsForbidden).
	Quotas(ctx context.Context, service Service, projectID string) ([]Quota, error)
}

// Network is a Neutron network.
type Network struct {
	ID        string
	Name      string
	ProjectID string
	Status    string
	Shared    bool
}

// Subnet is a Neutron subnet.
type Subnet struct {
	ID        string
	Name      string
	ProjectID string
	NetworkID string
	CIDR      string
	IPVersion int
}

// Networks reads networks and subnets.
type Networks interface {
	GetNetwork(ctx context.Context, id string) (*Network, error)
	GetSubnet(ctx context.Context, id string) (*Subnet, error)
}

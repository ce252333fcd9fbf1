package cloudheal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// Name of the controller (events, metrics, status lines, its block status.cloudheal).
const Name = v1alpha1.ControllerCloudHeal

// Reconciler is cloudheal: the pass runner with cloudheal's settings, read and repairs.
type Reconciler = pass.Runner[Settings, *State]

// Options tune cloudheal.
type Options struct {
	// Defaults of the interval and the cap per pass for clusters that set none.
	Defaults v1alpha1.ControllerDefaults
	// Metrics of cloudheal's own (nil: unregistered); the passes' are PassMetrics.
	Metrics *Metrics
	// PassMetrics of the runner (nil: unregistered).
	PassMetrics *pass.Metrics
	// Timeout bounds one pass (default pass.DefaultTimeout).
	Timeout time.Duration
}

// New returns cloudheal over VitalsClusters.
func New(d *pass.Deps, o Options) (*Reconciler, error) {
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return pass.New[Settings, *State](d, &healer{o: o}, pass.Options{Timeout: o.Timeout, Metrics: o.PassMetrics})
}

type healer struct{ o Options }

// Settings are a cluster's cloudheal settings with defaults applied.
type Settings struct {
	v1alpha1.CommonSettings
	// ClusterName is Cinder CSI's --cluster (spec.openstack.clusterName, default the resource's name).
	ClusterName string
	// AttachmentTimeout is how long an attachment must be seen stale before it is removed.
	AttachmentTimeout time.Duration
	// DebrisProofAge is how old the first sighting of debris must be before it is removed.
	DebrisProofAge time.Duration
}

// Common implements pass.Settings.
func (s Settings) Common() v1alpha1.CommonSettings { return s.CommonSettings }

// State is one pass's read.
type State struct {
	Settings Settings
	// Volumes of the cluster by ID (Cinder CSI's metadata names the cluster).
	Volumes map[string]openstack.Volume
	// Attachments of the cluster's volumes.
	Attachments []openstack.VolumeAttachment
	// Servers of the project by ID.
	Servers map[string]bool
	// ReadyServers are the servers a Ready Node names; NodeServers every server a Node names.
	ReadyServers, NodeServers map[string]bool
	// PVs names the PersistentVolume of each volume (Cinder CSI's volumeHandle).
	PVs map[string]string
	// LBServices are the workload cluster's Services of type LoadBalancer.
	LBServices []corev1.Service
	// Groups are the project's security groups by name (read only when there are LBServices).
	Groups map[string][]openstack.SecurityGroup
	// LoadBalancers of the project (read only when there are LBServices).
	LoadBalancers []openstack.LoadBalancer
	// SubnetID is spec.openstack.subnetID.
	SubnetID string
	// NodesReady: the workload cluster has Nodes, all Ready.
	NodesReady bool
	// Debris is the debris repair's read (nil unless it is enabled).
	Debris *DebrisRead
	// SubnetCIDR is the member subnet's (spec.openstack.subnetID; "" when the spec names none).
	SubnetCIDR string
	// Prev is the block before the pass (never nil); Status the block the repairs write.
	Prev, Status *v1alpha1.CloudHealStatus
}

func (h *healer) Name() string { return Name }

func (h *healer) Needs() []string {
	return []string{remediation.CheckCloud, remediation.CheckWorkload}
}

func (h *healer) Repairs() []pass.Repair[*State] {
	return []pass.Repair[*State]{StaleAttachments{m: h.o.Metrics}, LBSecurityGroups{m: h.o.Metrics}, LBConvergence{m: h.o.Metrics},
		LiveDebris{m: h.o.Metrics}}
}

// Total is how many attachments the cluster's volumes hold (the storm rule's whole).
func (h *healer) Total(st *State) int { return len(st.Attachments) }

func (h *healer) Forget(key types.NamespacedName) { h.o.Metrics.forget(key) }

// Settings returns c's settings.
func (h *healer) Settings(c *v1alpha1.VitalsCluster) (Settings, error) {
	sp := c.Spec.Controllers.CloudHeal
	s := Settings{CommonSettings: sp.ControllerSpec.Settings(h.o.Defaults), ClusterName: c.Name,
		AttachmentTimeout: sp.Repairs.StaleAttachments.TimeoutOrDefault(), DebrisProofAge: sp.Repairs.Debris.ProofAgeOrDefault()}
	if n := c.Spec.OpenStack.ClusterName; n != "" {
		s.ClusterName = n
	}
	if s.AttachmentTimeout < time.Minute {
		return s, errors.New("spec.controllers.cloudheal.repairs.staleAttachments.timeout: must be at least 1m")
	}
	if s.DebrisProofAge < v1alpha1.MinDebrisProofAge {
		return s, errors.New("spec.controllers.cloudheal.repairs.debris.proofAge: must be at least 10m")
	}
	return s, nil
}

// Read reads the project's volumes, their attachments and servers, and the workload cluster's Nodes and
// PersistentVolumes, each completely, or aborts the pass.
func (h *healer) Read(ctx context.Context, in *pass.ReadInput[Settings]) (*State, error) {
	st := &State{Settings: in.Settings, Volumes: map[string]openstack.Volume{}, Servers: map[string]bool{},
		ReadyServers: map[string]bool{}, NodeServers: map[string]bool{}, PVs: map[string]string{}, Prev: &v1alpha1.CloudHealStatus{}}
	if p := in.Cluster.Status.CloudHeal; p != nil {
		st.Prev = p.DeepCopy()
	}
	st.Status = st.Prev.DeepCopy()
	if (StaleAttachments{}).Enabled(in.Cluster) {
		// only what an enabled repair detects from is read
		cr, err := ReadCloud(ctx, in.Scope.Cloud, in.Settings.ClusterName)
		if err != nil {
			return nil, err
		}
		st.Volumes, st.Attachments, st.Servers = cr.Volumes, cr.Attachments, cr.Servers
	}
	var ns corev1.NodeList
	if err := in.Workload.Reader().List(ctx, &ns); err != nil {
		return nil, fmt.Errorf("read the workload cluster's nodes: %w", err)
	}
	st.NodeServers, st.ReadyServers = nodeServers(ns.Items)
	st.NodesReady = len(ns.Items) > 0
	for i := range ns.Items {
		st.NodesReady = st.NodesReady && nodes.Ready(&ns.Items[i])
	}
	var pvs corev1.PersistentVolumeList
	if err := in.Workload.Reader().List(ctx, &pvs); err != nil {
		return nil, fmt.Errorf("read the workload cluster's persistent volumes: %w", err)
	}
	for i := range pvs.Items {
		if csi := pvs.Items[i].Spec.CSI; csi != nil && csi.VolumeHandle != "" {
			st.PVs[csi.VolumeHandle] = pvs.Items[i].Name
		}
	}
	if err := readLBGroups(ctx, in, st); err != nil {
		return nil, err
	}
	return st, nil
}

// readLBGroups reads the workload cluster's LoadBalancer Services and, when there are any, the project's
// security groups.
func readLBGroups(ctx context.Context, in *pass.ReadInput[Settings], st *State) error {
	st.Groups = map[string][]openstack.SecurityGroup{}
	st.SubnetID = in.Cluster.Spec.OpenStack.SubnetID
	if in.Scope.Subnet != nil {
		st.SubnetCIDR = in.Scope.Subnet.CIDR
	}
	var svcs corev1.ServiceList
	if err := in.Workload.Reader().List(ctx, &svcs); err != nil {
		return fmt.Errorf("read the workload cluster's services: %w", err)
	}
	for i := range svcs.Items {
		if svcs.Items[i].Spec.Type == corev1.ServiceTypeLoadBalancer {
			st.LBServices = append(st.LBServices, svcs.Items[i])
		}
	}
	debris := (LiveDebris{}).Enabled(in.Cluster)
	if len(st.LBServices) == 0 && !debris {
		return nil
	}
	gs, err := in.Scope.Cloud.ListSecurityGroups(ctx, openstack.ListOpts{})
	if err != nil {
		return fmt.Errorf("read the project's security groups: %w", err)
	}
	for _, g := range gs {
		st.Groups[g.Name] = append(st.Groups[g.Name], g)
	}
	if st.LoadBalancers, err = in.Scope.Cloud.ListLoadBalancers(ctx, openstack.ListOpts{}); err != nil {
		return fmt.Errorf("read the project's load balancers: %w", err)
	}
	if debris {
		if st.Debris, err = readDebris(ctx, in, svcs.Items); err != nil {
			return err
		}
	}
	return nil
}

// readDebris reads what the debris repair judges, each list completely: the project's floating IPs and
// servers and, when the spec names the subnet, the ports on its network.
func readDebris(ctx context.Context, in *pass.ReadInput[Settings], svcs []corev1.Service) (*DebrisRead, error) {
	d := &DebrisRead{Services: svcs, Servers: map[string]bool{}}
	var err error
	if d.FloatingIPs, err = in.Scope.Cloud.ListFloatingIPs(ctx, openstack.ListOpts{}); err != nil {
		return nil, fmt.Errorf("read the project's floating IPs: %w", err)
	}
	if in.Scope.Subnet == nil || in.Scope.Subnet.NetworkID == "" {
		return d, nil
	}
	if d.Ports, err = in.Scope.Cloud.ListPorts(ctx, openstack.ListOpts{NetworkID: in.Scope.Subnet.NetworkID}); err != nil {
		return nil, fmt.Errorf("read the ports on the cluster's network: %w", err)
	}
	ss, err := in.Scope.Cloud.ListServers(ctx, openstack.ListOpts{})
	if err != nil {
		return nil, fmt.Errorf("read the project's servers: %w", err)
	}
	for _, s := range ss {
		d.Servers[s.ID] = true
	}
	d.PortsJudged = true
	return d, nil
}

// CloudRead is the cloud's part of a pass's read: the cluster's volumes, their attachments, and the
// project's servers.
type CloudRead struct {
	// Volumes of the cluster by ID (Cinder CSI's metadata names the cluster).
	Volumes map[string]openstack.Volume
	// Attachments of the cluster's volumes.
	Attachments []openstack.VolumeAttachment
	// Servers of the project by ID (read only when the volumes hold an attachment).
	Servers map[string]bool
}

// ReadCloud reads the cluster's volumes (Cinder CSI's metadata cinder.csi.openstack.org/cluster equal to
// clusterName), their attachments and, when they hold any, the project's servers, each completely: a failed
// list is an error, never an empty list. cloudheal's pass and `vitals doctor` read the same.
func ReadCloud(ctx context.Context, cloud tenancy.Cloud, clusterName string) (*CloudRead, error) {
	out := &CloudRead{Volumes: map[string]openstack.Volume{}, Servers: map[string]bool{}}
	att, ok := tenancy.Attachments(cloud)
	if !ok {
		return nil, pass.Abort(pass.ReasonUnsafeRead, errors.New("the cluster's cloud cannot read volume attachments"))
	}
	vs, err := cloud.ListVolumes(ctx, openstack.ListOpts{})
	if err != nil {
		return nil, fmt.Errorf("read the cluster's volumes: %w", err)
	}
	for _, v := range vs {
		if v.Metadata[ccm.MetadataCluster] == clusterName {
			out.Volumes[v.ID] = v
		}
	}
	as, err := att.ListVolumeAttachments(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the volumes' attachments: %w", err)
	}
	for _, a := range as {
		if _, ours := out.Volumes[a.VolumeID]; ours {
			out.Attachments = append(out.Attachments, a)
		}
	}
	if len(out.Attachments) == 0 {
		// only a cluster with attachments needs to know which servers are gone
		return out, nil
	}
	ss, err := cloud.ListServers(ctx, openstack.ListOpts{})
	if err != nil {
		return nil, fmt.Errorf("read the project's servers: %w", err)
	}
	for _, s := range ss {
		out.Servers[s.ID] = true
	}
	return out, nil
}

// Gone are the attachments of r that hold a volume (reserved, attaching, detaching, in-use) for a server
// the project does not list.
func (r *CloudRead) Gone() []openstack.VolumeAttachment {
	var out []openstack.VolumeAttachment
	for _, a := range r.Attachments {
		if holds(r.Volumes[a.VolumeID]) && a.ServerID != "" && !r.Servers[a.ServerID] {
			out = append(out, a)
		}
	}
	return out
}

// holds reports whether v is in a state an attachment holds a volume in.
func holds(v openstack.Volume) bool { return slices.Contains(holding, strings.ToLower(v.Status)) }

// nodeServers are the servers the Nodes name, and those a Ready Node names.
func nodeServers(ns []corev1.Node) (all, ready map[string]bool) {
	all, ready = map[string]bool{}, map[string]bool{}
	for i := range ns {
		id := nodes.ServerID(ns[i].Spec.ProviderID)
		if id == "" {
			continue
		}
		all[id] = true
		if nodes.Ready(&ns[i]) {
			ready[id] = true
		}
	}
	return all, ready
}

// Status writes the block the repairs left.
func (h *healer) Status(_ *v1alpha1.VitalsCluster, st *State, _ []string, cs *v1alpha1.ClusterStatus) {
	cs.CloudHeal = st.Status
}

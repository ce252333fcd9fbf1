package flight

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/nodes"
)

// ReasonHostDown is NodesHealthy's reason, and the Warning's, while a compute host is taken for down.
const ReasonHostDown = "HostDown"

// maxHostsDown bounds status.flight.hostsDown (the CRD's limit), maxHostServers each finding's servers.
const (
	maxHostsDown   = 50
	maxHostServers = 100
)

// downHosts are the compute hosts taken for down in this pass (nodes.DownHosts over the cases), each a finding
// that keeps its first sighting from prev. A node counts against its host only while it is unreachable (Ready
// Unknown: its kubelet silent, as on a dead hypervisor, due or not); a node whose kubelet reports, Ready or not,
// proves its host alive: two nodes NotReady for reasons of their own never stop each other's repair.
func (f *nodesFinding) downHosts(prev []v1alpha1.HostFinding) map[string]v1alpha1.HostFinding {
	if !f.s.HostDown {
		return nil
	}
	var placed []nodes.Placed
	zone := map[string]string{}
	for _, c := range f.cases {
		if c.gone || c.server.HostID == "" || (c.server.Status != "ACTIVE" && !rebootingStatus[c.server.Status]) {
			continue // a server off, in error or building is no evidence of its host either way
		}
		if c.node == nil {
			continue // a server still joining says nothing of its host
		}
		placed = append(placed, nodes.Placed{Server: c.server.ID, HostID: c.server.HostID, Unhealthy: nodes.Unreachable(c.node)})
		zone[c.server.HostID] = c.server.Zone
	}
	down := nodes.DownHosts(placed, f.s.HostDownNodes)
	if len(down) == 0 {
		return nil
	}
	out := map[string]v1alpha1.HostFinding{}
	for h, ids := range down {
		since := metav1.NewTime(f.now)
		if i := slices.IndexFunc(prev, func(p v1alpha1.HostFinding) bool { return p.HostID == h }); i >= 0 {
			since = prev[i].Since
		}
		if len(ids) > maxHostServers {
			ids = ids[:maxHostServers]
		}
		out[h] = v1alpha1.HostFinding{HostID: h, Zone: zone[h], Servers: ids, Since: since}
	}
	return out
}

// hostList is the findings sorted by first sighting then hostId, bounded.
func (f *nodesFinding) hostList() []v1alpha1.HostFinding {
	if len(f.hosts) == 0 {
		return nil
	}
	out := make([]v1alpha1.HostFinding, 0, len(f.hosts))
	for _, h := range f.hosts {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b v1alpha1.HostFinding) int {
		if c := a.Since.Compare(b.Since.Time); c != 0 {
			return c
		}
		return strings.Compare(a.HostID, b.HostID)
	})
	if len(out) > maxHostsDown {
		out = out[:maxHostsDown]
	}
	return out
}

// hostMessage names a host finding: its hostId (short), zone and servers, and what an administrator can do.
func hostMessage(h v1alpha1.HostFinding) string {
	zone := ""
	if h.Zone != "" {
		zone = " in zone " + h.Zone
	}
	return fmt.Sprintf("compute host %s (hostId)%s taken for down since %s: %d of the cluster's nodes on it are unhealthy and none is healthy (%s); no server on it is rebooted; an administrator finds the host with `openstack server show %s -c OS-EXT-SRV-ATTR:host` and evacuates it (`openstack compute service set --down <host> nova-compute`, then `nova host-evacuate <host>`)",
		nodes.ShortHostID(h.HostID), zone, h.Since.UTC().Format("2006-01-02T15:04:05Z"), len(h.Servers), strings.Join(h.Servers, ", "), h.Servers[0])
}

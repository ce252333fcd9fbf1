package nodes

import (
	"slices"
)

// DefaultHostDownNodes is how many of a cluster's nodes on one compute host must be unhealthy, with none of
// them healthy, before the host is taken for down.
const DefaultHostDownNodes = 2

// Placed is one server of a cluster as the host rule sees it: its Nova hostId (opaque, per project: the same
// for two servers of the project on one compute host) and whether its node is down now in a way that speaks
// against its host (the caller's choice: flight counts an unreachable node, whose kubelet is silent).
type Placed struct {
	Server    string
	HostID    string
	Unhealthy bool
}

// DownHosts are the compute hosts taken for down, each with its servers (sorted): at least min of the cluster's
// servers on the host are unhealthy and none of them is healthy, while the cluster has a healthy server on
// another host. Several nodes of one host failing together are one failure, of the host: rebooting them one by
// one only times out on a dead hypervisor. A cluster whose servers all share one host, or all of whose hosts
// look down, shows no host apart from the cluster: no host is taken for down (the storm rule and the outage
// freeze are for that). A server without a hostId is no evidence either way.
func DownHosts(servers []Placed, min int) map[string][]string {
	if min < 2 {
		min = DefaultHostDownNodes
	}
	type tally struct {
		bad     []string
		healthy int
	}
	by := map[string]*tally{}
	for _, s := range servers {
		if s.HostID == "" {
			continue
		}
		t := by[s.HostID]
		if t == nil {
			t = &tally{}
			by[s.HostID] = t
		}
		if s.Unhealthy {
			t.bad = append(t.bad, s.Server)
		} else {
			t.healthy++
		}
	}
	alive := 0
	for _, t := range by {
		if t.healthy > 0 {
			alive++
		}
	}
	if alive == 0 {
		return nil
	}
	out := map[string][]string{}
	for h, t := range by {
		if t.healthy == 0 && len(t.bad) >= min {
			slices.Sort(t.bad)
			out[h] = t.bad
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ShortHostID is a hostId as messages name it: its first 12 hex digits (enough to tell a project's hosts
// apart; the full one is in status and metrics).
func ShortHostID(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

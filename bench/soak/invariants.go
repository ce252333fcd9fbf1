package main

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/sharding"
)

// leaseObs is one version of a range Lease as the soak saw it.
type leaseObs struct {
	Range    int           `json:"range"`
	Holder   string        `json:"holder"`
	Acquire  time.Time     `json:"acquire"`
	Renew    time.Time     `json:"renew"`
	Duration time.Duration `json:"duration"`
	Version  string        `json:"version"`
}

// span is a time a cluster was paused, or a replica frozen.
type span struct {
	Who      string    `json:"who"`
	From, To time.Time `json:"-"`
}

// clusterRec is what the soak knows of one cluster.
type clusterRec struct {
	Name    string
	Project string
	UID     types.UID
	Router  string
	// Deleted is when the VitalsCluster's deletion was asked for (zero: never).
	Deleted time.Time
	// Keep: routes that must stay on the router while the cluster lives (live, foreign, excluded).
	Keep []cloudsim.Route
	// Excluded: the destinations its exclusion annotation names.
	Excluded []string
	// Volumes, LoadBalancers and Servers must stay while the cluster lives.
	Volumes, LoadBalancers, Servers []string
}

// violation is one broken invariant.
type violation struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// findings is what the analysis of a run found.
type findings struct {
	Writes        int            `json:"writes"`
	ByReplica     map[string]int `json:"writes_by_replica"`
	ByKind        map[string]int `json:"writes_by_kind"`
	Deletes       int            `json:"deletes"`
	FaultedWrites int            `json:"faulted_writes"`
	// LateByFence: writes that arrived after the sender's fenced validity (renewal + lease - margin) but
	// before another replica could act: sent in time, delivered late (informational).
	LateByFence int         `json:"late_by_fence"`
	Violations  []violation `json:"violations"`
}

func (f *findings) add(kind, format string, args ...any) {
	f.Violations = append(f.Violations, violation{kind, fmt.Sprintf(format, args...)})
}

// Kinds of violations.
const (
	// NotHeld: a write on a cluster by a replica that did not hold the cluster's range when it arrived
	// (another had taken it, or its Lease had expired so that another could have).
	violNotHeld = "NotHeld"
	// Wrongful: a write the cluster's state forbade (paused, not deleted, flight off).
	violWrongful = "Wrongful"
	// DoubleDelete: a DELETE of an object whose earlier DELETE was accepted.
	violDoubleDelete = "DoubleDelete"
	// Unattributed: a write whose sender or cluster cannot be told.
	violUnattributed = "Unattributed"
	// EndState: something that had to stay is gone at the end.
	violEndState = "EndState"
)

// isWrite tells the calls that change the cloud (tokens aside).
func isWrite(r *cloudsim.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return !strings.HasSuffix(r.Path, "/auth/tokens")
	}
	return false
}

// replicaOf is the operator replica a call names in its User-Agent ("vitals-operator/<identity> ...").
func replicaOf(ua string) string {
	const p = "vitals-operator/"
	i := strings.Index(ua, p)
	if i < 0 {
		return ""
	}
	id := ua[i+len(p):]
	if j := strings.IndexByte(id, ' '); j >= 0 {
		id = id[:j]
	}
	return id
}

// writeKind names a write for the counts: "DELETE volumes", "PUT routers/remove_extraroutes" ...
func writeKind(r *cloudsim.Request) string {
	parts := strings.Split(strings.Trim(r.Path, "/"), "/")
	var keep []string
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "0123456789") && len(p) >= 20 { // IDs and project IDs
			continue
		}
		keep = append(keep, p)
	}
	if len(keep) > 3 {
		keep = keep[len(keep)-2:]
	}
	return r.Method + " " + strings.Join(keep, "/")
}

// check applies the invariants to the writes of the request log. leases: every version of the range
// Leases seen; pauses: per cluster name; clusters by project; wireBound: how long after a pause was set a
// write may still arrive (the fence's live-read age, the write timeout, slack).
func check(reqs []cloudsim.Request, leases []leaseObs, pauses []span, clusters map[string]*clusterRec, space sharding.Space,
	margin, wireBound time.Duration) findings {
	f := findings{ByReplica: map[string]int{}, ByKind: map[string]int{}}
	byRange := map[int][]leaseObs{}
	for _, o := range leases {
		byRange[o.Range] = append(byRange[o.Range], o)
	}
	for i := range byRange {
		sort.Slice(byRange[i], func(a, b int) bool { return byRange[i][a].Renew.Before(byRange[i][b].Renew) })
	}
	accepted := map[string]time.Time{} // DELETE path -> when a DELETE of it was accepted
	for k := range reqs {
		r := &reqs[k]
		if !isWrite(r) {
			continue
		}
		f.Writes++
		kind := writeKind(r)
		f.ByKind[kind]++
		if r.Fault != "" {
			f.FaultedWrites++
		}
		rep := replicaOf(r.UserAgent)
		c := clusters[r.Project]
		if rep == "" || c == nil {
			f.add(violUnattributed, "%s %s at %s: replica %q, project %q", r.Method, r.Path, stamp(r.Time), rep, r.Project)
			continue
		}
		f.ByReplica[rep]++
		// held at send time
		i := space.Of(c.UID)
		if why := held(byRange[i], rep, r.Time, margin, &f); why != "" {
			f.add(violNotHeld, "%s %s on cluster %s (range %d) by %s at %s: %s", r.Method, r.Path, c.Name, i, rep, stamp(r.Time), why)
		}
		// wrongful
		for _, p := range pauses {
			if p.Who == c.Name && r.Time.After(p.From.Add(wireBound)) && (p.To.IsZero() || r.Time.Before(p.To)) {
				f.add(violWrongful, "%s %s on cluster %s at %s, %s after it was paused", r.Method, r.Path, c.Name, stamp(r.Time), r.Time.Sub(p.From).Round(time.Millisecond))
			}
		}
		if strings.HasPrefix(r.Path, "/compute/") {
			f.add(violWrongful, "%s %s on cluster %s at %s: flight is off, nothing may change a server", r.Method, r.Path, c.Name, stamp(r.Time))
		}
		if r.Method == http.MethodDelete {
			f.Deletes++
			if c.Deleted.IsZero() || r.Time.Before(c.Deleted) {
				f.add(violWrongful, "DELETE %s of cluster %s at %s: the cluster was not being deleted", r.Path, c.Name, stamp(r.Time))
			}
			if at, ok := accepted[r.Path]; ok {
				f.add(violDoubleDelete, "DELETE %s by %s at %s: already deleted at %s", r.Path, rep, stamp(r.Time), stamp(at))
			}
			if r.Status >= 200 && r.Status < 300 {
				if _, ok := accepted[r.Path]; !ok {
					accepted[r.Path] = r.Time
				}
			}
		}
	}
	return f
}

// held says why rep did not hold the range at t ("" when it did): the last version of the range's Lease
// renewed at or before t must be rep's, and unexpired (renewed less than a lease duration before t: after
// that another replica may take the range). A write after rep's own fenced validity (renewal + lease -
// margin) but before the expiry counts as LateByFence.
func held(obs []leaseObs, rep string, t time.Time, margin time.Duration, f *findings) string {
	// the version in force at t: the last renewed at or before t
	i := sort.Search(len(obs), func(k int) bool { return obs[k].Renew.After(t) })
	if i == 0 {
		return "no version of the range's Lease was renewed before"
	}
	cur := obs[i-1]
	switch {
	case cur.Holder != rep:
		h := cur.Holder
		if h == "" {
			h = "nobody (released)"
		}
		return fmt.Sprintf("the range's Lease was %s's (renewed %s)", h, stamp(cur.Renew))
	case !t.Before(cur.Renew.Add(cur.Duration)):
		return fmt.Sprintf("its Lease expired at %s (renewed %s): another replica could have taken it", stamp(cur.Renew.Add(cur.Duration)), stamp(cur.Renew))
	}
	if !t.Before(cur.Renew.Add(cur.Duration - margin)) {
		f.LateByFence++
	}
	return ""
}

// endState checks what must be left in the cloud: for every cluster not deleted, its kept routes, its
// volumes, load balancers and servers.
func endState(sim *cloudsim.Sim, clusters map[string]*clusterRec) []violation {
	var out []violation
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	byName := map[string]*clusterRec{}
	for _, c := range clusters {
		byName[c.Name] = c
	}
	for _, n := range names {
		c := byName[n]
		if !c.Deleted.IsZero() {
			continue
		}
		routes, _, ok := sim.Router(c.Router)
		if !ok {
			out = append(out, violation{violEndState, fmt.Sprintf("cluster %s: router %s gone", n, c.Router)})
			continue
		}
		for _, k := range c.Keep {
			if !slices.Contains(routes, k) {
				out = append(out, violation{violEndState, fmt.Sprintf("cluster %s: route %s via %s removed (live, foreign or excluded)", n, k.Destination, k.NextHop)})
			}
		}
		for _, v := range c.Volumes {
			if st, ok := sim.VolumeStatus(v); !ok || st == "deleting" {
				out = append(out, violation{violEndState, fmt.Sprintf("cluster %s: volume %s gone (%q)", n, v, st)})
			}
		}
		for _, l := range c.LoadBalancers {
			if st, ok := sim.LoadBalancerStatus(l); !ok || st == "PENDING_DELETE" || st == "DELETED" {
				out = append(out, violation{violEndState, fmt.Sprintf("cluster %s: load balancer %s gone (%q)", n, l, st)})
			}
		}
		for _, s := range c.Servers {
			if _, _, ok := sim.ServerStatus(s); !ok {
				out = append(out, violation{violEndState, fmt.Sprintf("cluster %s: server %s gone", n, s)})
			}
		}
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

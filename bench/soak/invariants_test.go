package main

import (
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/sharding"
)

// TestCheck: each invariant on a small history: the range of the cluster is a's from t0, renewed every 5
// s until t0+10s; b takes it over at t0+30s (a lease duration of 20 s after a's last renewal).
func TestCheck(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	space, _ := sharding.NewSpace(1)
	c := &clusterRec{Name: "c1", Project: "p1", UID: "u1"}
	clusters := map[string]*clusterRec{"p1": c}
	leases := []leaseObs{
		{Range: 0, Holder: "a", Renew: at(0), Duration: 20 * time.Second},
		{Range: 0, Holder: "a", Renew: at(5), Duration: 20 * time.Second},
		{Range: 0, Holder: "a", Renew: at(10), Duration: 20 * time.Second},
		{Range: 0, Holder: "b", Renew: at(30), Duration: 20 * time.Second},
	}
	put := func(s float64, by string) cloudsim.Request {
		return cloudsim.Request{Time: at(s), Method: "PUT", Path: "/networking/v2.0/routers/r1/remove_extraroutes", Status: 200, Project: "p1",
			UserAgent: "vitals-operator/" + by + " vitals gophercloud/v2"}
	}
	del := func(s float64, by string, status int) cloudsim.Request {
		return cloudsim.Request{Time: at(s), Method: "DELETE", Path: "/volume/v3/p1/volumes/v1", Status: status, Project: "p1",
			UserAgent: "vitals-operator/" + by}
	}
	for _, tc := range []struct {
		name    string
		reqs    []cloudsim.Request
		pauses  []span
		deleted float64 // when the cluster's deletion was asked for (0: never)
		want    []string
		late    int
	}{
		{name: "writes of the holder", reqs: []cloudsim.Request{put(1, "a"), put(12, "a"), put(31, "b")}},
		{name: "within the lease but after the fence", reqs: []cloudsim.Request{put(23, "a")}, late: 1},
		{name: "after the lease expired", reqs: []cloudsim.Request{put(30.5, "a")}, want: []string{violNotHeld}},
		{name: "after the takeover", reqs: []cloudsim.Request{put(31, "a")}, want: []string{violNotHeld}},
		{name: "before any holder", reqs: []cloudsim.Request{put(-1, "b")}, want: []string{violNotHeld}},
		{name: "another's range", reqs: []cloudsim.Request{put(6, "b")}, want: []string{violNotHeld}},
		{name: "reads do not count", reqs: []cloudsim.Request{{Time: at(40), Method: "GET", Path: "/networking/v2.0/routers", Project: "p1", UserAgent: "vitals-operator/a"}}},
		{name: "unattributed", reqs: []cloudsim.Request{{Time: at(1), Method: "PUT", Path: "/networking/v2.0/routers/r1", Project: "p1", UserAgent: "curl"}}, want: []string{violUnattributed}},
		{name: "paused: within the bound", pauses: []span{{Who: "c1", From: at(2), To: at(20)}}, reqs: []cloudsim.Request{put(8, "a")}},
		{name: "paused: past the bound", pauses: []span{{Who: "c1", From: at(2), To: at(20)}}, reqs: []cloudsim.Request{put(9.5, "a")}, want: []string{violWrongful}},
		{name: "paused: after the pause", pauses: []span{{Who: "c1", From: at(2), To: at(10)}}, reqs: []cloudsim.Request{put(11, "a")}},
		{name: "delete of a cluster not deleted", reqs: []cloudsim.Request{del(3, "a", 202)}, want: []string{violWrongful}},
		{name: "delete of a deleted cluster", deleted: 2, reqs: []cloudsim.Request{del(3, "a", 202)}},
		{name: "a second delete after an accepted one", deleted: 2, reqs: []cloudsim.Request{del(3, "a", 202), del(4, "a", 404)}, want: []string{violDoubleDelete}},
		{name: "a delete again after a failed one", deleted: 2, reqs: []cloudsim.Request{del(3, "a", 500), del(4, "a", 202)}},
		{name: "a server write", reqs: []cloudsim.Request{{Time: at(3), Method: "POST", Path: "/compute/v2.1/servers/s1/action", Project: "p1", UserAgent: "vitals-operator/a"}}, want: []string{violWrongful}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Deleted = time.Time{}
			if tc.deleted != 0 {
				c.Deleted = at(tc.deleted)
			}
			f := check(tc.reqs, leases, tc.pauses, clusters, space, 8*time.Second, 7*time.Second)
			var got []string
			for _, v := range f.Violations {
				got = append(got, v.Kind)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("violations %v, want %v: %+v", got, tc.want, f.Violations)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("violation %d: %s, want %s", i, got[i], tc.want[i])
				}
			}
			if f.LateByFence != tc.late {
				t.Errorf("%d late by the fence, want %d", f.LateByFence, tc.late)
			}
		})
	}
}

func TestReplicaOf(t *testing.T) {
	for ua, want := range map[string]string{
		"vitals-operator/host_3f2a vitals gophercloud/v2.8.0": "host_3f2a",
		"vitals gophercloud/v2.8.0":                           "",
		"vitals-operator/x":                                   "x",
	} {
		if got := replicaOf(ua); got != want {
			t.Errorf("replicaOf(%q) = %q, want %q", ua, got, want)
		}
	}
}

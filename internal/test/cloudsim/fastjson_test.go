package cloudsim

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestAppendServerJSONMatchesView(t *testing.T) {
	sim, err := New(Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.SeedCluster(ClusterSeed{Project: "p", Name: "k", Nodes: 3, Volumes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Seed(SeedSpec{Projects: []ProjectSeed{{Name: "p", SecurityGroups: []string{"web"},
		Networks: []NetworkSeed{{Name: "b-net", CIDR: "10.9.0.0/24"}, {Name: "a-net \"quoted\"\n\u2028<&>", CIDR: "fd00::/64"}},
		Servers: []ServerSeed{
			{Name: "weird \x01 \"name\" é \u2029", Network: "b-net", Status: "BUILD", Tags: []string{"t1", "t2"},
				Metadata: map[string]string{"z": "1", "a": "<x>", "m": "\\"}, SecurityGroups: []string{"web", "default"}},
			{Name: "v6", Network: "a-net \"quoted\"\n\u2028<&>", Status: "SHUTOFF", NoSecurityGroup: true},
		},
		Volumes: []VolumeSeed{{Name: "att", AttachedTo: "v6"}},
	}}}); err != nil {
		t.Fatal(err)
	}
	sim.mu.Lock()
	defer sim.mu.Unlock()
	if len(sim.st.servers.m) != 5 {
		t.Fatalf("%d servers", len(sim.st.servers.m))
	}
	attached := sim.attachmentsLocked(sc.ProjectID)
	for _, v := range sim.st.servers.m {
		fast := sim.appendServerJSON(nil, "http://h", v, attached)
		if !json.Valid(fast) {
			t.Fatalf("server %s: invalid JSON %s", v.Name, fast)
		}
		slow, err := json.Marshal(sim.nova.viewServer("http://h", v, attached))
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(slow, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("server %q:\nfast %s\nslow %s", v.Name, fast, slow)
		}
	}
}

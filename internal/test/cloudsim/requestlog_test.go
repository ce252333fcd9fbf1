package cloudsim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

// lockedBuffer is a request log a test reads while the simulator writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestRequestLog: every API call is a line with its arrival time, method, path, status, the caller's
// project and user agent, and the fault that changed it.
func TestRequestLog(t *testing.T) {
	var log lockedBuffer
	sim, err := cloudsim.New(cloudsim.Options{Clock: nil, Seed: 7, RequestLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim.Handler())
	t.Cleanup(ts.Close)
	c, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "p", Name: "c", Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.CreateUser("u", "pw", false, c.ProjectID); err != nil {
		t.Fatal(err)
	}
	fault, err := sim.AddFault(cloudsim.Fault{Service: "network", Method: http.MethodPut, Path: "/routers/", Status: 500, Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := gcos.NewClient(ts.URL + "/v3")
	if err != nil {
		t.Fatal(err)
	}
	pc.UserAgent.Prepend("vitals-operator/replica-7")
	if err := gcos.Authenticate(t.Context(), pc, gophercloud.AuthOptions{IdentityEndpoint: ts.URL + "/v3", Username: "u", Password: "pw", DomainName: "Default", TenantName: "p"}); err != nil {
		t.Fatal(err)
	}
	nc, err := gcos.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	name := "renamed"
	_, err = routers.Update(t.Context(), nc, c.RouterID, routers.UpdateOpts{Name: name}).Extract()
	if err == nil {
		t.Fatal("the fault did not fail the update")
	}
	if _, err := routers.Update(t.Context(), nc, c.RouterID, routers.UpdateOpts{Name: name}).Extract(); err != nil {
		t.Fatal(err)
	}
	var puts []cloudsim.Request
	sc := bufio.NewScanner(strings.NewReader(func() string { log.mu.Lock(); defer log.mu.Unlock(); return log.b.String() }()))
	for sc.Scan() {
		var r cloudsim.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if r.Method == http.MethodPut {
			puts = append(puts, r)
		}
	}
	if len(puts) != 2 {
		t.Fatalf("%d PUT lines, want 2", len(puts))
	}
	for i, want := range []struct {
		status int
		fault  string
	}{{500, fault}, {200, ""}} {
		r := puts[i]
		if r.Status != want.status || r.Fault != want.fault || r.Service != "network" || !strings.HasSuffix(r.Path, "/routers/"+c.RouterID) ||
			r.Time.IsZero() || !strings.HasPrefix(r.UserAgent, "vitals-operator/replica-7") {
			t.Errorf("PUT %d: %+v, want status %d, fault %q, the router's path, a time and the user agent", i, r, want.status, want.fault)
		}
	}
	for i, r := range puts {
		if r.Project != c.ProjectID {
			t.Errorf("PUT %d's project %q, want %q", i, r.Project, c.ProjectID)
		}
	}
}

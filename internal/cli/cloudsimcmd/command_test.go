package cloudsimcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	"github.com/vitalsproject/vitals/internal/cli/clirun"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCloudsimCommand(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	root := NewCommand(&out, &errOut)
	root.SetArgs([]string{"--listen", "127.0.0.1:0", "--demo", "--seed", "5", "--state", state, "--delete-latency", "2s"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var authURL string
	for deadline := time.Now().Add(20 * time.Second); authURL == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range strings.Split(out.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "export OS_AUTH_URL="); ok {
				authURL = v
			}
		}
	}
	if authURL == "" {
		t.Fatalf("no OS_AUTH_URL printed; stdout %q stderr %q", out.String(), errOut.String())
	}
	pc, err := gcos.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: authURL, Username: "demo",
		Password: "demo", DomainName: "Default", TenantName: "demo"})
	if err != nil {
		t.Fatalf("authenticate as demo: %v", err)
	}
	nc, err := gcos.NewNetworkV2(pc, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	pages, err := routers.List(nc, nil).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := routers.ExtractRouters(pages)
	if len(rs) != 1 || len(rs[0].Routes) != 10 {
		t.Fatalf("demo routers = %+v; want one router with 10 routes", rs)
	}
	resp, err := http.Get(strings.TrimSuffix(authURL, "/v3") + "/_sim/knobs")
	if err != nil {
		t.Fatal(err)
	}
	var knobs cloudsim.Knobs
	err = json.NewDecoder(resp.Body).Decode(&knobs)
	resp.Body.Close()
	if err != nil || knobs.ServerDeleteLatency != cloudsim.Duration(2*time.Second) ||
		knobs.VolumeDeleteLatency != knobs.ServerDeleteLatency || knobs.LBDeleteLatency != knobs.ServerDeleteLatency {
		t.Fatalf("knobs after --delete-latency 2s = %+v, %v", knobs, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cloudsim: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("cloudsim did not stop")
	}
	if fi, err := os.Stat(state); err != nil || fi.Size() == 0 {
		t.Fatalf("state file not saved: %v", err)
	}
}

func TestCloudsimBadConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "seed.yaml")
	if err := os.WriteFile(bad, []byte("projects:\n- name: p\n  servrs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--listen", "nohost"},
		{"--token-ttl", "0s"},
		{"--max-routes", "-1"},
		{"--delete-latency", "-1s"},
		{"--listen", "127.0.0.1:0", "--seed-file", bad},
		{"--listen", "127.0.0.1:0", "--seed-file", filepath.Join(t.TempDir(), "missing.yaml")},
	} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != clirun.ExitConfig {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errOut.String(), clirun.ExitConfig)
		}
	}
}

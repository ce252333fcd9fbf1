package e2e

// docs/cloudsim.md's recipe for using the simulator from the same shell, run as written by bash: it must
// return (an eval of the simulator's output waited for ever) with the OS_* variables of a cloud that
// authenticates.

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/openstack"
)

// docBlock returns the first fenced block of the document at path (relative to the repository) that
// holds marker.
func docBlock(t *testing.T, path, marker string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(opRepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	for i, block := range strings.Split(string(data), "```") {
		if i%2 == 1 && strings.Contains(block, marker) {
			_, body, _ := strings.Cut(block, "\n") // the fence's language
			return body
		}
	}
	t.Fatalf("%s holds no fenced block with %q", path, marker)
	return ""
}

func TestCloudsimDocRecipe(t *testing.T) {
	recipe := docBlock(t, "docs/cloudsim.md", "> cloudsim.env &")
	// The documented port may be taken on a shared machine: port 0 picks a free one (the env file says
	// which).
	if !strings.Contains(recipe, "127.0.0.1:8780") {
		t.Fatalf("the recipe no longer listens on 127.0.0.1:8780; update this test:\n%s", recipe)
	}
	recipe = strings.ReplaceAll(recipe, "127.0.0.1:8780", "127.0.0.1:0")

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "vitals-cloudsim"), "./cmd/vitals-cloudsim")
	build.Dir = opRepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/vitals-cloudsim: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// After the recipe: the simulator's PID (to stop it) and the variables it set.
	sh := exec.CommandContext(ctx, "bash", "-euc", recipe+"\necho \"PID=$!\"\nenv | grep '^OS_'\n")
	sh.Dir = dir
	logs, err := os.Create(filepath.Join(dir, "stderr.log")) // the simulator's logs and bash's errors
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	sh.Stderr = logs
	sh.WaitDelay = 5 * time.Second
	out, err := sh.Output()
	if ctx.Err() != nil {
		t.Fatalf("the recipe did not return within 2 minutes (it waits for the simulator that keeps running):\n%s", recipe)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	if pid, perr := strconv.Atoi(env["PID"]); perr == nil && pid > 0 {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGTERM) })
	}
	if err != nil {
		errs, _ := os.ReadFile(logs.Name())
		t.Fatalf("the recipe failed: %v\n%s\n%s", err, out, errs)
	}
	if env["OS_AUTH_URL"] == "" || env["OS_REGION_NAME"] == "" {
		t.Fatalf("the recipe set no OS_AUTH_URL or OS_REGION_NAME:\n%s", out)
	}
	auth, err := openstack.AuthFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the variables the recipe set: %v", err)
	}
	c, err := openstack.Connect(ctx, openstack.Config{Auth: auth})
	if err != nil {
		t.Fatalf("authenticate with the variables the recipe set: %v", err)
	}
	t.Logf("the recipe returned; %s authenticates to project %s", env["OS_AUTH_URL"], c.ProjectID())
}

package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// TestMemoryCheckRealCgroup runs the agent's memory check against this machine's memory cgroup, found
// the way the agent finds it (auto).
func TestMemoryCheckRealCgroup(t *testing.T) {
	dir, version, err := checks.MemoryCgroupDir("", 0)
	if err != nil {
		prereq.Missing(t, "no memory cgroup on this machine: %v", err)
	}
	t.Logf("memory cgroup v%d at %s", version, dir)
	o := DefaultOptions()
	o.MaxMemoryMiB = 1 // any process, let alone a cgroup, uses more
	run, src, err := memoryCheck(o)
	if err != nil {
		t.Fatal(err)
	}
	if src != string(checks.MemoryCgroup) {
		t.Fatalf("auto chose %s, want cgroup", src)
	}
	if err := run(context.Background()); err == nil || !strings.Contains(err.Error(), "over limit 1 MiB") {
		t.Fatalf("err = %v, want over limit", err)
	}
	o.MaxMemoryMiB = 1 << 30
	run, _, _ = memoryCheck(o)
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryCheckFixtures points cg_path at fixture directories of both cgroup versions.
func TestMemoryCheckFixtures(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		limit   int64
		wantErr string
	}{
		{"v2 under", map[string]string{"memory.current": "104857600\n"}, 200, ""},
		{"v2 over", map[string]string{"memory.current": "314572800\n"}, 200, "cgroup memory.current 300.0 MiB over limit 200 MiB"},
		{"v1 with swap accounting", map[string]string{"memory.memsw.usage_in_bytes": "314572800\n", "memory.usage_in_bytes": "1048576\n"}, 200, "memory.memsw.usage_in_bytes 300.0 MiB over limit"},
		{"v1 without swap accounting", map[string]string{"memory.usage_in_bytes": "314572800\n"}, 200, "memory.usage_in_bytes 300.0 MiB over limit"},
		{"disabled", map[string]string{"memory.current": "314572800\n"}, -1, ""},
		{"no usage file", map[string]string{"cgroup.procs": "1\n"}, 200, "no memory usage file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
			}
			ini := filepath.Join(t.TempDir(), "kuryr.conf")
			os.WriteFile(ini, []byte("[cni_health_server]\ncg_path = "+dir+"\n"), 0o644)
			o := DefaultOptions()
			if _, err := ApplyKuryrINI(ini, &o); err != nil {
				t.Fatal(err)
			}
			o.MaxMemoryMiB = tt.limit
			run, src, err := memoryCheck(o)
			if err != nil {
				t.Fatal(err)
			}
			if tt.limit != -1 && src != string(checks.MemoryCgroup) {
				t.Fatalf("source %s, want cgroup", src)
			}
			err = run(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

package checks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

func TestMemoryRSSRealProcess(t *testing.T) {
	tests := []struct {
		name    string
		limit   int64
		wantErr string
	}{
		{"under a generous limit", 1 << 20, ""},
		{"over a 1 MiB limit", 1, "rss "},
		{"disabled", -1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Memory(MemoryOptions{LimitMiB: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			detail, err := run(t, f)
			wantResult(t, err, tc.wantErr)
			if err == nil && tc.limit > 0 && !strings.HasPrefix(detail, "rss ") {
				t.Errorf("detail %q", detail)
			}
		})
	}
}

func TestMemoryCgroupRealMachine(t *testing.T) {
	dir, version, err := MemoryCgroupDir("", 0)
	if err != nil {
		prereq.Missing(t, "no memory cgroup visible here: %v", err)
	}
	t.Logf("memory cgroup v%d at %s", version, dir)
	if version == 1 {
		if _, err := os.Stat(filepath.Join(dir, "memory.usage_in_bytes")); err != nil {
			t.Fatalf("v1 dir without usage file: %v", err)
		}
	} else if _, err := os.Stat(filepath.Join(dir, "memory.current")); err != nil {
		t.Fatalf("v2 dir without memory.current: %v", err)
	}
	for _, tc := range []struct {
		limit   int64
		wantErr string
	}{{1 << 30, ""}, {1, "over limit 1 MiB"}} {
		f, err := Memory(MemoryOptions{LimitMiB: tc.limit, Source: MemoryCgroup})
		if err != nil {
			t.Fatal(err)
		}
		detail, err := run(t, f)
		wantResult(t, err, tc.wantErr)
		t.Logf("limit %d: %q %v", tc.limit, detail, err)
	}
	// The same directory given as Kuryr's cg_path.
	f, err := Memory(MemoryOptions{LimitMiB: 1 << 30, Source: MemoryCgroup, CgroupPath: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, f)
	wantResult(t, err, "")
}

func TestMemoryCgroupFixtures(t *testing.T) {
	const (
		hybridMounts = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n" +
			"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
			"36 31 0:33 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
			"41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
		v2Mounts  = "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
		dockerV1  = "40 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
		escapedV2 = "30 23 0:27 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n"
	)
	tests := []struct {
		name        string
		files       map[string]string
		opts        MemoryOptions
		wantVersion int
		wantDir     string
		wantErr     string
	}{
		{
			name: "cgroup v2 only, under the limit",
			files: map[string]string{
				"proc/self/cgroup":                               "0::/kubepods/pod1/cni\n",
				"proc/self/mountinfo":                            v2Mounts,
				"sys/fs/cgroup/kubepods/pod1/cni/memory.current": "104857600\n",
			},
			opts:        MemoryOptions{LimitMiB: 200},
			wantVersion: 2, wantDir: "sys/fs/cgroup/kubepods/pod1/cni",
		},
		{
			name: "cgroup v2 over the limit",
			files: map[string]string{
				"proc/self/cgroup":                 "0::/svc\n",
				"proc/self/mountinfo":              v2Mounts,
				"sys/fs/cgroup/svc/memory.current": "314572800\n",
			},
			opts:        MemoryOptions{LimitMiB: 200},
			wantVersion: 2, wantDir: "sys/fs/cgroup/svc",
			wantErr: "cgroup memory.current 300.0 MiB over limit 200 MiB",
		},
		{
			name: "hybrid host: v1 memory wins, memsw counted",
			files: map[string]string{
				"proc/self/cgroup":    "4:memory:/system.slice/kuryr-cni.service\n1:cpu,cpuacct:/\n0::/\n",
				"proc/self/mountinfo": hybridMounts,
				"sys/fs/cgroup/memory/system.slice/kuryr-cni.service/memory.usage_in_bytes":       "104857600\n",
				"sys/fs/cgroup/memory/system.slice/kuryr-cni.service/memory.memsw.usage_in_bytes": "262144000\n",
			},
			opts:        MemoryOptions{LimitMiB: 200},
			wantVersion: 1, wantDir: "sys/fs/cgroup/memory/system.slice/kuryr-cni.service",
			wantErr: "cgroup memory.memsw.usage_in_bytes 250.0 MiB over limit 200 MiB",
		},
		{
			name: "v1 without swap accounting",
			files: map[string]string{
				"proc/self/cgroup":                             "4:memory:/a\n",
				"proc/self/mountinfo":                          hybridMounts,
				"sys/fs/cgroup/memory/a/memory.usage_in_bytes": "1048576\n",
			},
			opts:        MemoryOptions{LimitMiB: 2},
			wantVersion: 1, wantDir: "sys/fs/cgroup/memory/a",
		},
		{
			name: "v1 in a container: host path hidden behind the mount root",
			files: map[string]string{
				"proc/self/cgroup":                           "4:memory:/docker/abc\n",
				"proc/self/mountinfo":                        dockerV1,
				"sys/fs/cgroup/memory/memory.usage_in_bytes": "3145728\n",
			},
			opts:        MemoryOptions{LimitMiB: 2},
			wantVersion: 1, wantDir: "sys/fs/cgroup/memory",
			wantErr: "3.0 MiB over limit 2 MiB",
		},
		{
			name: "escaped mount point",
			files: map[string]string{
				"proc/self/cgroup":          "0::/\n",
				"proc/self/mountinfo":       escapedV2,
				"mnt/cg two/memory.current": "1\n",
			},
			opts:        MemoryOptions{LimitMiB: 1},
			wantVersion: 2, wantDir: "mnt/cg two",
		},
		{
			name: "another process by pid",
			files: map[string]string{
				"proc/42/cgroup":                 "0::/x\n",
				"proc/self/mountinfo":            v2Mounts,
				"sys/fs/cgroup/x/memory.current": "1\n",
			},
			opts:        MemoryOptions{LimitMiB: 1, PID: 42},
			wantVersion: 2, wantDir: "sys/fs/cgroup/x",
		},
		{
			name: "no memory cgroup mounted",
			files: map[string]string{
				"proc/self/cgroup":    "4:memory:/a\n",
				"proc/self/mountinfo": "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n",
			},
			opts:    MemoryOptions{LimitMiB: 1},
			wantErr: "no mounted memory cgroup",
		},
		{
			name: "cg_path override",
			files: map[string]string{
				"cg/memory.usage_in_bytes": "5\n",
			},
			opts: MemoryOptions{LimitMiB: 1, CgroupPath: "/cg"},
		},
		{
			name:    "cg_path without usage files",
			files:   map[string]string{"cg/other": ""},
			opts:    MemoryOptions{LimitMiB: 1, CgroupPath: "/cg"},
			wantErr: "no memory usage file",
		},
		{
			name:    "garbage usage",
			files:   map[string]string{"cg/memory.current": "lots\n"},
			opts:    MemoryOptions{LimitMiB: 1, CgroupPath: "/cg"},
			wantErr: "parse",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			if tc.opts.CgroupPath == "" {
				dir, version, err := MemoryCgroupDir(root, tc.opts.PID)
				if tc.wantDir != "" {
					if err != nil {
						t.Fatal(err)
					}
					if want := filepath.Join(root, tc.wantDir); dir != want || version != tc.wantVersion {
						t.Errorf("MemoryCgroupDir = %s v%d, want %s v%d", dir, version, want, tc.wantVersion)
					}
				}
			}
			opts := tc.opts
			opts.Source, opts.Root = MemoryCgroup, root
			f, err := Memory(opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, f)
			wantResult(t, err, tc.wantErr)
		})
	}
}

func TestMemoryRSSFixture(t *testing.T) {
	tests := []struct {
		status, wantErr string
	}{
		{"Name:\tx\nVmRSS:\t  10240 kB\n", ""},
		{"Name:\tx\nVmRSS:\t  30720 kB\n", "rss 30.0 MiB over limit 20 MiB"},
		{"Name:\tx\n", "no VmRSS field"},
		{"VmRSS:\t12 MB\n", "parse VmRSS"},
	}
	for _, tc := range tests {
		root := writeTree(t, map[string]string{"proc/self/status": tc.status})
		f, err := Memory(MemoryOptions{LimitMiB: 20, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		_, err = run(t, f)
		wantResult(t, err, tc.wantErr)
	}
}

func TestMemoryInvalidOptions(t *testing.T) {
	for _, o := range []MemoryOptions{{}, {LimitMiB: -2}, {LimitMiB: 1, Source: "swap"}, {LimitMiB: 1, PID: -3}} {
		if _, err := Memory(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

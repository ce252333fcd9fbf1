package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// MemorySource selects what Memory measures.
type MemorySource string

const (
	// MemoryRSS is the process's resident set size (VmRSS in /proc/<pid>/status).
	MemoryRSS MemorySource = "rss"
	// MemoryCgroup is the usage of the process's memory cgroup: memory.current on cgroup v2;
	// memory.memsw.usage_in_bytes (memory+swap) on cgroup v1 when the kernel accounts swap, else
	// memory.usage_in_bytes.
	MemoryCgroup MemorySource = "cgroup"
)

// MemoryOptions configure Memory.
type MemoryOptions struct {
	// LimitMiB is the most memory allowed, in MiB. -1 disables the check (it always passes).
	LimitMiB int64
	// Source is what is measured; "" means MemoryRSS.
	Source MemorySource
	// CgroupPath overrides the cgroup directory (Kuryr's cg_path, e.g.
	// /sys/fs/cgroup/memory/system.slice/kuryr-cni.service). Empty: found from
	// /proc/<pid>/cgroup and /proc/self/mountinfo.
	CgroupPath string
	// PID whose memory is measured; 0 means the calling process.
	PID int
	// Root is the filesystem root under which /proc and the cgroup filesystem are read; "" is "/".
	Root string
}

const mib = 1 << 20

// Memory checks that a process (or its cgroup) uses at most LimitMiB of memory.
func Memory(opts MemoryOptions) (Func, error) {
	if opts.LimitMiB == -1 {
		return func(ctx context.Context) error {
			observe(ctx, "disabled")
			return nil
		}, nil
	}
	if opts.LimitMiB <= 0 {
		return nil, fmt.Errorf("memory check: limit %d MiB: expected a positive number of MiB or -1 to disable", opts.LimitMiB)
	}
	if opts.PID < 0 {
		return nil, fmt.Errorf("memory check: invalid pid %d", opts.PID)
	}
	limit := uint64(opts.LimitMiB) * mib
	var read func() (uint64, string, error)
	switch opts.Source {
	case "", MemoryRSS:
		path := rooted(opts.Root, procPath(opts.PID, "status"))
		read = func() (uint64, string, error) {
			v, err := readVmRSS(path)
			return v, "rss", err
		}
	case MemoryCgroup:
		read = func() (uint64, string, error) {
			dir := rooted(opts.Root, opts.CgroupPath)
			if opts.CgroupPath == "" {
				var err error
				if dir, _, err = MemoryCgroupDir(opts.Root, opts.PID); err != nil {
					return 0, "", err
				}
			}
			return readCgroupMemory(dir)
		}
	default:
		return nil, fmt.Errorf("memory check: unknown source %q (expected rss or cgroup)", opts.Source)
	}
	return func(ctx context.Context) error {
		used, what, err := read()
		if err != nil {
			return err
		}
		if used > limit {
			return fmt.Errorf("%s %.1f MiB over limit %d MiB", what, float64(used)/mib, opts.LimitMiB)
		}
		observe(ctx, fmt.Sprintf("%s %.1f/%d MiB", what, float64(used)/mib, opts.LimitMiB))
		return nil
	}, nil
}

// readVmRSS returns VmRSS in bytes from a /proc/<pid>/status file.
func readVmRSS(path string) (uint64, error) {
	v, err := statusField(path, "VmRSS")
	if err != nil {
		return 0, err
	}
	num, unit, _ := strings.Cut(v, " ")
	kb, err := strconv.ParseUint(num, 10, 64)
	if err != nil || strings.TrimSpace(unit) != "kB" {
		return 0, fmt.Errorf("parse VmRSS %q in %s", v, path)
	}
	return kb * 1024, nil
}

// readCgroupMemory reads the usage of a memory cgroup directory of either version and names the
// file it came from.
func readCgroupMemory(dir string) (uint64, string, error) {
	for _, name := range []string{"memory.current", "memory.memsw.usage_in_bytes", "memory.usage_in_bytes"} {
		path := filepath.Join(dir, name)
		// The directory may come from the configuration: a file there that is no cgroup's (a named
		// pipe, /dev/zero behind a link) must not hang or fill the check.
		data, err := bounded.ReadFile(context.Background(), path, 64<<10)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			// memory.memsw.* exists but is unreadable when swap accounting is off on some kernels.
			if name == "memory.memsw.usage_in_bytes" {
				continue
			}
			return 0, "", fmt.Errorf("read cgroup memory usage: %w", err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return 0, "", fmt.Errorf("parse %s: %w", path, err)
		}
		return v, "cgroup " + name, nil
	}
	return 0, "", fmt.Errorf("no memory usage file (memory.current or memory.usage_in_bytes) in %s", dir)
}

// MemoryCgroupDir finds the memory cgroup directory of a process (pid 0: the caller) from
// /proc/<pid>/cgroup and /proc/self/mountinfo under root ("" is "/"), and its version (1 or 2).
// A cgroup v1 memory hierarchy wins over the unified one on hybrid hosts, because there the
// memory controller is attached to v1.
func MemoryCgroupDir(root string, pid int) (string, int, error) {
	cgPath := rooted(root, procPath(pid, "cgroup"))
	data, err := os.ReadFile(cgPath)
	if err != nil {
		return "", 0, fmt.Errorf("find memory cgroup: %w", err)
	}
	var v1Path, v2Path string
	var haveV1, haveV2 bool
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, haveV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1Path, haveV1 = parts[2], true
			}
		}
	}
	mountPath := rooted(root, "/proc/self/mountinfo")
	mounts, err := os.ReadFile(mountPath)
	if err != nil {
		return "", 0, fmt.Errorf("find memory cgroup: %w", err)
	}
	var v1Mount, v1Root, v2Mount, v2Root string
	for line := range strings.Lines(string(mounts)) {
		pre, post, ok := strings.Cut(strings.TrimRight(line, "\n"), " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		p := strings.Fields(post)
		if len(f) < 5 || len(p) < 1 {
			continue
		}
		switch p[0] {
		case "cgroup2":
			if v2Mount == "" {
				v2Root, v2Mount = unescapeMount(f[3]), unescapeMount(f[4])
			}
		case "cgroup":
			if len(p) >= 3 && v1Mount == "" && hasOption(p[2], "memory") {
				v1Root, v1Mount = unescapeMount(f[3]), unescapeMount(f[4])
			}
		}
	}
	switch {
	case haveV1 && v1Mount != "":
		return cgroupJoin(root, v1Mount, v1Root, v1Path), 1, nil
	case haveV2 && v2Mount != "":
		return cgroupJoin(root, v2Mount, v2Root, v2Path), 2, nil
	}
	return "", 0, fmt.Errorf("find memory cgroup: no mounted memory cgroup for %s in %s", cgPath, mountPath)
}

// cgroupJoin maps a cgroup path to a directory under the hierarchy's mount point, falling back to
// the mount point itself when the path is not visible there (a container seeing the host's path).
func cgroupJoin(root, mount, mountRoot, path string) string {
	rel := path
	if mountRoot != "/" {
		if r, ok := strings.CutPrefix(path, mountRoot); ok && (r == "" || r[0] == '/') {
			rel = r
		}
	}
	dir := rooted(root, filepath.Join(mount, rel))
	if _, err := os.Stat(dir); err != nil {
		return rooted(root, mount)
	}
	return dir
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// unescapeMount undoes the octal escapes (\040 for a space) of /proc/self/mountinfo fields.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// CapabilityOptions configure Capability.
type CapabilityOptions struct {
	// Names of the capabilities that must be in the effective set, with or without the "CAP_"
	// prefix, in any case: "NET_ADMIN", "cap_net_raw".
	Names []string
	// PID whose set is read; 0 means the calling process (/proc/self).
	PID int
	// Root is the filesystem root under which /proc is read; "" means "/".
	Root string
}

// Capability checks that every named capability is in the effective set (CapEff in
// /proc/<pid>/status). A CNI daemon without NET_ADMIN cannot wire pods, for example.
func Capability(opts CapabilityOptions) (Func, error) {
	if len(opts.Names) == 0 {
		return nil, errors.New("capability check: no capability names")
	}
	bits := make([]int, 0, len(opts.Names))
	names := make([]string, 0, len(opts.Names))
	for _, n := range opts.Names {
		b, err := ParseCapability(n)
		if err != nil {
			return nil, fmt.Errorf("capability check: %w", err)
		}
		bits = append(bits, b)
		names = append(names, CapabilityName(b))
	}
	if opts.PID < 0 {
		return nil, fmt.Errorf("capability check: invalid pid %d", opts.PID)
	}
	path := rooted(opts.Root, procPath(opts.PID, "status"))
	detail := strings.Join(names, ",")
	return func(ctx context.Context) error {
		eff, err := readCapEff(path)
		if err != nil {
			return err
		}
		var missing []string
		for i, b := range bits {
			if eff&(1<<uint(b)) == 0 {
				missing = append(missing, names[i])
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s not in the effective set (CapEff %016x)", strings.Join(missing, ","), eff)
		}
		observe(ctx, detail)
		return nil
	}, nil
}

// procPath returns /proc/<pid>/<name>, or /proc/self/<name> for pid 0.
func procPath(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}

// readCapEff reads the CapEff mask from a /proc/<pid>/status file.
func readCapEff(path string) (uint64, error) {
	v, err := statusField(path, "CapEff")
	if err != nil {
		return 0, err
	}
	eff, err := strconv.ParseUint(v, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("parse CapEff %q in %s: %w", v, path, err)
	}
	return eff, nil
}

// statusField returns the value of one "Key:\tvalue" line of a /proc/<pid>/status file.
func statusField(path, key string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read process status: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no %s field in %s", key, path)
}

// capabilityNames lists every Linux capability by number (linux/capability.h, up to 6.x kernels).
var capabilityNames = [...]string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// CapabilityNames returns the names of the capabilities ParseCapability knows, without the CAP_
// prefix, in the order of their numbers.
func CapabilityNames() []string { return slices.Clone(capabilityNames[:]) }

// ParseCapability returns the number of a capability name ("NET_ADMIN", "CAP_NET_ADMIN", any
// case) or a decimal number below 64.
func ParseCapability(name string) (int, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "CAP_")
	for i, c := range capabilityNames {
		if c == n {
			return i, nil
		}
	}
	if v, err := strconv.Atoi(n); err == nil && v >= 0 && v < 64 {
		return v, nil
	}
	return 0, fmt.Errorf("unknown capability %q (expected a name such as NET_ADMIN)", name)
}

// CapabilityName returns the name of capability number n without the CAP_ prefix, or its number
// for one newer than this table.
func CapabilityName(n int) string {
	if n >= 0 && n < len(capabilityNames) {
		return capabilityNames[n]
	}
	return strconv.Itoa(n)
}

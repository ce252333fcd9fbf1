package checks

// The memory check on a real cgroup2 mount (issue 27: cgroup v2, the case that broke Kuryr, was tested on
// fixture files only, and a host that binds the memory controller to cgroup v1 cannot give it one). The
// test binary boots as the init of a small qemu guest, Debian's cloud kernel with an initramfs holding
// only this binary (and the libraries it links), mounts cgroup2, puts itself in a nested cgroup with
// memory.max, runs the memory check there, prints one line per case on the serial console and powers
// the guest off; the host side reads those lines. The guest runs under TCG, qemu's emulation: nested
// KVM on the development machine (itself a VM) does not get past the kernel's decompression.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

const (
	// vmEnv, on the guest kernel's command line, makes the test binary the guest's init.
	vmEnv = "VITALS_CGROUP2_VM"
	// envVMKernel is the guest kernel (hack/vmkernel-build.sh prints it; testenv exports it).
	envVMKernel = "VITALS_TEST_VM_KERNEL"
	vmLine      = "vitals-vm:"
)

func TestMain(m *testing.M) {
	if os.Getpid() == 1 && os.Getenv(vmEnv) == "1" {
		guest()
	}
	os.Exit(m.Run())
}

func TestMemoryCgroupV2RealMount(t *testing.T) {
	prereq.Short(t, "boots a qemu guest")
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		prereq.Missing(t, "qemu-system-x86_64 is not installed (Debian: qemu-system-x86)")
	}
	kernel := os.Getenv(envVMKernel)
	if kernel == "" {
		prereq.Missing(t, "%s is not set (hack/vmkernel-build.sh fetches the guest kernel; hack/testenv.sh exports it)", envVMKernel)
	}
	if _, err := os.Stat(kernel); err != nil {
		prereq.Missing(t, "the guest kernel: %v", err)
	}
	initrd := filepath.Join(t.TempDir(), "initramfs.cpio")
	if err := writeInitramfs(initrd); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, qemu, "-accel", "tcg", "-smp", "1", "-m", "1024",
		"-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio", "-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 quiet panic=-1 rdinit=/init "+vmEnv+"=1")
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("guest ran %s", time.Since(start).Round(time.Millisecond))
	lines := vmLines(out.String())
	if err != nil || len(lines) == 0 || lines[len(lines)-1] != "done" {
		t.Fatalf("the guest did not finish (%v): console:\n%s", err, tail(out.String(), 4000))
	}
	cases := 0
	for _, l := range lines[:len(lines)-1] {
		if r, ok := strings.CutPrefix(l, "FAIL "); ok {
			t.Error(r)
		} else {
			t.Log(l)
		}
		cases++
	}
	if cases < len(guestCases) {
		t.Errorf("the guest reported %d cases, want %d", cases, len(guestCases))
	}
}

func vmLines(console string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(console))
	for sc.Scan() {
		if _, l, ok := strings.Cut(strings.TrimRight(sc.Text(), "\r"), vmLine+" "); ok {
			lines = append(lines, l)
		}
	}
	return lines
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// The guest's cgroup: nested as a pod's is, memory.max set.
const (
	guestParent = "/sys/fs/cgroup/kubepods"
	guestDir    = guestParent + "/cni"
	guestMax    = 512 << 20 // a -race binary uses about 200 MiB here
	guestAlloc  = 96 << 20
)

// guestCases run in order in the guest, in guestDir; each returns a detail or an error.
var guestCases = []struct {
	name string
	run  func() (string, error)
}{
	{"the cgroup is found from /proc/self/cgroup and mountinfo, version 2", func() (string, error) {
		dir, v, err := MemoryCgroupDir("", 0)
		if err != nil {
			return "", err
		}
		if v != 2 || dir != guestDir {
			return "", fmt.Errorf("found v%d at %s, want v2 at %s", v, dir, guestDir)
		}
		return fmt.Sprintf("v%d at %s", v, dir), nil
	}},
	{"under the limit it passes, read from memory.current", func() (string, error) {
		return checkMemory(MemoryOptions{LimitMiB: 200, Source: MemoryCgroup}, "")
	}},
	{"after 96 MiB are touched it fails over a 64 MiB limit, with memory.current's value", func() (string, error) {
		ballast = make([]byte, guestAlloc)
		for i := 0; i < len(ballast); i += 4096 {
			ballast[i] = 1
		}
		d, err := checkMemory(MemoryOptions{LimitMiB: 64, Source: MemoryCgroup}, "over limit 64 MiB")
		if err != nil {
			return "", err
		}
		m := regexp.MustCompile(`memory\.current ([0-9.]+) MiB`).FindStringSubmatch(d)
		if m == nil {
			return "", fmt.Errorf("no usage in %q", d)
		}
		got, _ := strconv.ParseFloat(m[1], 64)
		if got < guestAlloc/(1<<20) || got > guestMax/(1<<20) {
			return "", fmt.Errorf("usage %.1f MiB: want at least the %d MiB touched, at most memory.max", got, guestAlloc>>20)
		}
		return d, nil
	}},
	{"the directory given as Kuryr's cg_path reads the same file", func() (string, error) {
		return checkMemory(MemoryOptions{LimitMiB: 64, Source: MemoryCgroup, CgroupPath: guestDir}, "cgroup memory.current")
	}},
	{"the cgroup is a real one: memory.max is the one set", func() (string, error) {
		b, err := os.ReadFile(guestDir + "/memory.max")
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(string(b)) != strconv.Itoa(guestMax) {
			return "", fmt.Errorf("memory.max %q", b)
		}
		ballast = nil
		return fmt.Sprintf("memory.max %s", strings.TrimSpace(string(b))), nil
	}},
}

var ballast []byte

// checkMemory runs the memory check; wantErr "" wants it to pass, else an error containing wantErr,
// whose text is the detail.
func checkMemory(o MemoryOptions, wantErr string) (string, error) {
	f, err := Memory(o)
	if err != nil {
		return "", err
	}
	var obs Observation
	err = f(WithObservation(context.Background(), &obs))
	switch {
	case wantErr == "" && err != nil:
		return "", err
	case wantErr == "":
		return obs.Detail, nil
	case err == nil:
		return "", fmt.Errorf("passed (%s), want an error with %q", obs.Detail, wantErr)
	case !strings.Contains(err.Error(), wantErr):
		return "", fmt.Errorf("error %q, want %q", err, wantErr)
	}
	return err.Error(), nil
}

// guest is the guest's init: it mounts what the check reads, enters its cgroup, runs guestCases and
// powers the guest off. It never returns.
func guest() {
	say := func(format string, args ...any) { fmt.Printf(vmLine+" "+format+"\n", args...) }
	if err := guestSetup(); err != nil {
		say("FAIL setup: %v", err)
	} else {
		for _, c := range guestCases {
			d, err := c.run()
			if err != nil {
				say("FAIL %s: %v", c.name, err)
				continue
			}
			say("ok %s: %s", c.name, d)
		}
	}
	say("done")
	_ = os.Stdout.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {}
}

func guestSetup() error {
	for _, m := range []struct{ fs, dir string }{{"proc", "/proc"}, {"sysfs", "/sys"}, {"cgroup2", "/sys/fs/cgroup"}} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.fs, m.dir, m.fs, 0, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fs, m.dir, err)
		}
	}
	mkdir := func(dir string) error { return os.Mkdir(dir, 0o755) }
	write := func(path, value string) error {
		if err := os.WriteFile(path, []byte(value), 0); err != nil {
			return fmt.Errorf("write %q to %s: %w", value, path, err)
		}
		return nil
	}
	for _, step := range []func() error{
		func() error { return write("/sys/fs/cgroup/cgroup.subtree_control", "+memory") },
		func() error { return mkdir(guestParent) },
		func() error { return write(guestParent+"/cgroup.subtree_control", "+memory") },
		func() error { return mkdir(guestDir) },
		func() error { return write(guestDir+"/memory.max", strconv.Itoa(guestMax)) },
		func() error { return write(guestDir+"/cgroup.procs", strconv.Itoa(os.Getpid())) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// writeInitramfs writes a newc cpio archive: this test binary as /init, the shared libraries it links
// (a -race binary is linked dynamically) at their paths, and /dev/console.
func writeInitramfs(path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	files := map[string]string{"/init": self}
	if out, err := exec.Command("ldd", self).Output(); err == nil {
		for _, m := range regexp.MustCompile(`(?m)(/\S+)\s+\(0x`).FindAllStringSubmatch(string(out), -1) {
			files[m[1]] = m[1]
		}
	}
	var buf bytes.Buffer
	w := &cpioWriter{w: &buf}
	dirs := map[string]bool{}
	for dst := range files {
		for d := filepath.Dir(dst); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range []string{"/dev", "/proc", "/sys"} {
		dirs[d] = true
	}
	for _, d := range sortedByDepth(dirs) {
		w.entry(d[1:], unix.S_IFDIR|0o755, 0, nil)
	}
	w.entry("dev/console", unix.S_IFCHR|0o600, unix.Mkdev(5, 1), nil)
	for dst, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("read %s for the initramfs: %w", src, err)
		}
		w.entry(dst[1:], unix.S_IFREG|0o755, 0, data)
	}
	w.entry("TRAILER!!!", 0, 0, nil)
	if w.err != nil {
		return w.err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// sortedByDepth: parents before their children.
func sortedByDepth(dirs map[string]bool) []string {
	out := slices.Collect(maps.Keys(dirs))
	slices.SortFunc(out, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	return out
}

// cpioWriter writes entries of the newc format the kernel unpacks.
type cpioWriter struct {
	w   io.Writer
	n   int64
	ino int
	err error
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) entry(name string, mode uint32, rdev uint64, data []byte) {
	c.ino++
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, len(data), 0, 0, unix.Major(rdev), unix.Minor(rdev), len(name)+1, 0)
	c.write([]byte(h))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
	if len(h) != 110 {
		c.err = errors.New("cpio: bad header length")
	}
}

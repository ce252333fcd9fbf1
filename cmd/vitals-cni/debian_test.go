package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vitalsproject/vitals/agent"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// debianCNI is where Debian's containernetworking-plugins puts the reference plugins.
const debianCNI = "/usr/lib/cni"

// netnsHolder starts a process in a new network namespace and returns its PID; the namespace lives as long
// as the process, which ends with the test.
func netnsHolder(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "infinity")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("a new network namespace: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd.Process.Pid
}

// TestReporterChainedWithDebianPlugins runs vitals-cni as a runtime does, in front of Debian's real bridge and
// host-local plugins (no stand-in): the runtime's side is a network namespace of its own (the bridge is made
// there, not on the machine), each pod's another. The pod gets its address on eth0; the agent counts the ADD;
// a delegate that fails (host-local out of addresses) is counted as a failure and trips the budget with the
// plugin's own error; DEL releases the address.
func TestReporterChainedWithDebianPlugins(t *testing.T) {
	prereq.Short(t, "runs Debian's CNI plugins")
	for _, p := range []string{"bridge", "host-local"} {
		if _, err := os.Stat(filepath.Join(debianCNI, p)); err != nil {
			missing(t, "Debian's CNI plugin "+p+" (apt-get install containernetworking-plugins; hack/install-deps.sh): "+err.Error())
		}
	}
	if os.Geteuid() != 0 {
		missing(t, "network namespaces need root")
	}
	dir := testenv.ShortDir(t, "vcni")
	bin := buildPlugin(t, dir)
	socket := filepath.Join(dir, "run", "cni.sock")
	base := startAgent(t, dir, socket)
	host := netnsHolder(t) // the runtime's namespace: the bridge cni-vt lives there

	conf := func(ipam map[string]any) string {
		b, err := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "pods", "type": "vitals-cni", "delegate": "bridge",
			"reportSocket": socket, "bridge": "cni-vt", "isGateway": true, "ipMasq": false, "ipam": ipam})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := conf(map[string]any{"type": "host-local", "dataDir": filepath.Join(dir, "ipam"),
		"ranges": [][]map[string]string{{{"subnet": "10.77.0.0/24"}}}})
	// one address, already taken: a node out of pod addresses
	full := filepath.Join(dir, "ipam-full")
	testenv.WriteFile(t, filepath.Join(full, "pods", "10.78.0.10"), []byte("someone-else\neth0"), 0o644)
	broken := conf(map[string]any{"type": "host-local", "dataDir": full,
		"ranges": [][]map[string]string{{{"subnet": "10.78.0.0/24", "rangeStart": "10.78.0.10", "rangeEnd": "10.78.0.10"}}}})

	run := func(command, id string, pod int, conf string) (string, string, int) {
		t.Helper()
		cmd := exec.Command("nsenter", "-t", strconv.Itoa(host), "-n", "--", bin)
		cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + id, "CNI_NETNS=/proc/" + strconv.Itoa(pod) + "/ns/net",
			"CNI_IFNAME=eth0", "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=" + id, "CNI_PATH=" + debianCNI,
			"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
		cmd.Stdin = strings.NewReader(conf)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return out.String(), errb.String(), ee.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return out.String(), errb.String(), 0
	}

	// ADD: the pod's address, from the bridge plugin's result and on its eth0
	pod1 := netnsHolder(t)
	out, stderr, code := run("ADD", "web-0", pod1, good)
	if code != 0 {
		t.Fatalf("ADD through vitals-cni to bridge: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	var res struct {
		IPs []struct{ Address string } `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.IPs) != 1 {
		t.Fatalf("the bridge plugin's result %q: %v", out, err)
	}
	addr, err := netip.ParsePrefix(res.IPs[0].Address)
	if err != nil || !netip.MustParsePrefix("10.77.0.0/24").Contains(addr.Addr()) {
		t.Fatalf("pod address %q, want one of 10.77.0.0/24", res.IPs[0].Address)
	}
	link, err := exec.Command("nsenter", "-t", strconv.Itoa(pod1), "-n", "--", "ip", "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(link), addr.String()) {
		t.Fatalf("the pod's eth0: %v\n%s, want %s", err, link, addr)
	}
	waitBody(t, base+"/metrics", `vitals_agent_cni_reports_total{op="ADD",result="success",source="socket"} 1`)

	// a delegate that fails, twice: counted, and the budget (one tolerated) trips with the plugin's error
	pod2 := netnsHolder(t)
	for i := 1; i <= 2; i++ {
		out, _, code := run("ADD", "web-1", pod2, broken)
		if code == 0 || !strings.Contains(out, "no IP addresses available") {
			t.Fatalf("ADD with host-local out of addresses: exit %d, stdout %q", code, out)
		}
		waitBody(t, base+"/metrics", `vitals_agent_cni_reports_total{op="ADD",result="failure",source="socket"} `+strconv.Itoa(i))
		// as a runtime does after a failed ADD: DEL (the bridge plugin made the pod's veth before asking IPAM)
		if out, stderr, code := run("DEL", "web-1", pod2, broken); code != 0 {
			t.Fatalf("DEL after the failed ADD: exit %d\nstdout %s\nstderr %s", code, out, stderr)
		}
	}
	body := waitBody(t, base+"/livez/"+agent.BudgetCNIAdd, "failure budget exhausted")
	if !strings.Contains(body, "CNI ADD failed for pod shop/web-1") || !strings.Contains(body, "no IP addresses available in range set") {
		t.Errorf("/livez/%s: %q", agent.BudgetCNIAdd, body)
	}

	// DEL: the address is released (host-local's reservation gone), reported as a success (the third DEL)
	if out, stderr, code := run("DEL", "web-0", pod1, good); code != 0 {
		t.Fatalf("DEL: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipam", "pods", addr.Addr().String())); !os.IsNotExist(err) {
		t.Errorf("host-local still holds %s after DEL: %v", addr.Addr(), err)
	}
	waitBody(t, base+"/metrics", `vitals_agent_cni_reports_total{op="DEL",result="success",source="socket"} 3`)

	// the CNI recovers: a successful ADD resets the consecutive budget
	if out, stderr, code := run("ADD", "web-2", netnsHolder(t), good); code != 0 {
		t.Fatalf("ADD after recovery: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	waitBody(t, base+"/livez/"+agent.BudgetCNIAdd, "ok")
}

// missing skips t, or fails it when the test services are required (VITALS_TESTENV_REQUIRED=1, as in CI).
func missing(t *testing.T, what string) {
	t.Helper()
	prereq.Missing(t, "%s", what)
}

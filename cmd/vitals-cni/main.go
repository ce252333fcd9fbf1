// Command vitals-cni is the CNI reporter: a delegating CNI plugin that runs the node's real CNI plugin
// and tells the node agent the result of every ADD, DEL and CHECK, successes included, so that the
// agent's CNI ADD failure budget can count failures in a row as Kuryr's CNI daemon did.
//
// The runtime runs it as any plugin: the CNI_* environment and the network configuration on stdin. The
// configuration names the real plugin in "delegate"; vitals-cni replaces its own "type" with it, drops
// its own keys ("delegate", "reportSocket"), runs the real plugin found in CNI_PATH with the same
// environment and that configuration, and returns its stdout, stderr and exit status unchanged. Then it
// sends one report to the agent's socket (at most one second; a missing or slow agent never changes the
// CNI result):
//
//	{"type": "vitals-cni", "delegate": "bridge", "bridge": "cni0", "ipam": {...}}
//
// `vitals-cni install DIR` copies the binary into DIR (the host's CNI binary directory), replacing an
// older copy atomically: the chart's init container does this from the agent's image.
//
// It imports the standard library, the report client and the version variable only (docs/agent.md, "The CNI
// reporter"). `vitals-cni --version` prints its version.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/cnireport"
	"github.com/vitalsproject/vitals/internal/base/version"
)

// reportTimeout bounds the report to the agent: a CNI operation must not wait for it.
const reportTimeout = time.Second

// supportedVersions answers VERSION, which carries no configuration (so no delegate to ask): the
// reporter passes every version's configuration and result through unchanged.
var supportedVersions = []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		// By hand only: a runtime asks CNI_COMMAND=VERSION, with no arguments.
		fmt.Printf("vitals-cni %s\n", version.Get().Line())
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "install" {
		if err := install(os.Args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "vitals-cni: install: %v\n", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// install copies this executable to dir/vitals-cni: written beside it, then renamed over it, so that a
// runtime never runs a half-written plugin.
func install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, ".vitals-cni-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("copy to %s: %w", dir, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, "vitals-cni"))
}

// run delegates one CNI command and returns the exit status.
func run(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if getenv("CNI_COMMAND") == "VERSION" {
		_ = json.NewEncoder(stdout).Encode(map[string]any{"cniVersion": "1.1.0", "supportedVersions": supportedVersions})
		return 0
	}
	conf, err := io.ReadAll(io.LimitReader(stdin, maxConf+1))
	if err != nil {
		return fail(stdout, 11, "read network configuration from stdin", err)
	}
	if len(conf) > maxConf {
		return fail(stdout, 7, "invalid vitals-cni configuration", fmt.Errorf("network configuration on stdin larger than %d bytes", maxConf))
	}
	delegate, socket, delegateConf, err := delegateConfig(conf)
	if err != nil {
		return fail(stdout, 7, "invalid vitals-cni configuration", err) // 7: invalid network config
	}
	bin, err := findPlugin(delegate, getenv("CNI_PATH"))
	if err != nil {
		return fail(stdout, 11, "find the delegate plugin", err)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(string(delegateConf))
	out := &head{max: maxResult}
	cmd.Stdout = io.MultiWriter(stdout, out)
	cmd.Stderr = stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fail(stdout, 11, "run the delegate plugin "+delegate, err)
		}
		code = ee.ExitCode()
	}
	if op := cnireport.Op(strings.ToUpper(getenv("CNI_COMMAND"))); op == cnireport.OpAdd || op == cnireport.OpDel || op == cnireport.OpCheck {
		report(stderr, socket, op, code, out.String(), getenv)
	}
	return code
}

// Bounds of what vitals-cni reads: the network configuration the runtime gives (a CNI configuration is a
// few KiB; a Kubernetes ConfigMap holds 1 MiB at most), and the part of the delegate's result kept to
// read its error from (the delegate's whole result still goes to the runtime).
const (
	maxConf   = 1 << 20
	maxResult = 64 << 10
)

// head keeps the first max bytes written to it and drops the rest, without failing the write.
type head struct {
	max int
	b   strings.Builder
}

func (h *head) Write(p []byte) (int, error) {
	if room := h.max - h.b.Len(); room > 0 {
		h.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (h *head) String() string { return h.b.String() }

// delegateConfig reads the delegate's type and the socket from conf and returns the configuration the
// delegate gets: conf with "type" set to the delegate and vitals-cni's own keys removed. Every other
// key (name, cniVersion, prevResult, the delegate's options) passes unchanged.
func delegateConfig(conf []byte) (delegate, socket string, out []byte, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(conf, &m); err != nil {
		return "", "", nil, fmt.Errorf("network configuration: %w", err)
	}
	if raw, ok := m["delegate"]; !ok || json.Unmarshal(raw, &delegate) != nil || delegate == "" {
		return "", "", nil, errors.New(`"delegate": expected the real plugin's type, a string`)
	}
	if strings.ContainsAny(delegate, `/\`) || delegate == "." || delegate == ".." {
		return "", "", nil, fmt.Errorf(`"delegate": %q is a path; expected a plugin name found in CNI_PATH`, delegate)
	}
	socket = cnireport.DefaultSocketPath
	if raw, ok := m["reportSocket"]; ok {
		if json.Unmarshal(raw, &socket) != nil || socket == "" {
			return "", "", nil, errors.New(`"reportSocket": expected the agent's socket path, a string`)
		}
	}
	delete(m, "delegate")
	delete(m, "reportSocket")
	m["type"], _ = json.Marshal(delegate)
	out, err = json.Marshal(m)
	return delegate, socket, out, err
}

// findPlugin finds the executable name in the colon-separated dirs of CNI_PATH.
func findPlugin(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("plugin %q not found in CNI_PATH %q", name, path)
}

// report sends the operation's result to the agent. Failing to report is written to stderr (the
// runtime logs it) and changes nothing else.
func report(stderr io.Writer, socket string, op cnireport.Op, code int, stdout string, getenv func(string) string) {
	r := cnireport.Report{Op: op, Result: cnireport.Success, ContainerID: getenv("CNI_CONTAINERID")}
	if ns, name := podOf(getenv("CNI_ARGS")); ns != "" && name != "" {
		r.Pod = ns + "/" + name
	}
	if code != 0 {
		r.Result = cnireport.Failure
		r.Error = errorMessage(stdout, code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	if _, err := cnireport.Send(ctx, socket, r); err != nil {
		fmt.Fprintf(stderr, "vitals-cni: report %s %s to %s: %v\n", op, r.Result, socket, err)
	}
}

// podOf reads K8S_POD_NAMESPACE and K8S_POD_NAME from CNI_ARGS ("K=V;K=V").
func podOf(args string) (ns, name string) {
	for _, kv := range strings.Split(args, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "K8S_POD_NAMESPACE":
			ns = v
		case "K8S_POD_NAME":
			name = v
		}
	}
	return ns, name
}

// errorMessage is the "msg" (and "details") of a CNI error result, or the exit status.
func errorMessage(stdout string, code int) string {
	var e struct {
		Code    int    `json:"code"`
		Msg     string `json:"msg"`
		Details string `json:"details"`
	}
	if json.Unmarshal([]byte(stdout), &e) == nil && e.Msg != "" {
		if e.Details != "" {
			return e.Msg + ": " + e.Details
		}
		return e.Msg
	}
	return fmt.Sprintf("delegate plugin exited with status %d", code)
}

// fail writes a CNI error result for a failure of vitals-cni itself and returns the exit status.
func fail(stdout io.Writer, code int, msg string, err error) int {
	_ = json.NewEncoder(stdout).Encode(map[string]any{"cniVersion": "1.0.0", "code": code, "msg": "vitals-cni: " + msg, "details": err.Error()})
	return 1
}

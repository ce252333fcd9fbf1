package checktype

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// DefaultVitalsURL is what a vitals check asks when given no URL: the readiness endpoint of a
// Vitals health server (vitals serve, the operator, the agent) on its conventional local port,
// verbose so that the failing checks can be named.
const DefaultVitalsURL = "http://127.0.0.1:8080/readyz?verbose"

var (
	caFile   = Option{Name: "ca_file", Arg: "FILE", Doc: "PEM bundle that replaces the system roots", Aliases: []Alias{{Name: "cacert", Deprecated: true}}}
	insecure = Option{Name: "insecure", Kind: Bool, Doc: "skip verification of the server's certificate", Aliases: []Alias{{Name: "k"}}}
	cmdline  = Option{Name: "cmdline", Kind: Bool, Doc: "match PROCESS anywhere in the command line, like pgrep -f"}
)

// Builtin returns the check types of package checks, which every frontend offers (the
// in-process ones only where a process lives long enough to measure itself).
func Builtin() []Type {
	return []Type{
		{
			Name: "http", Args: []string{"url"}, Timeout: 10 * time.Second, SelfTimed: true,
			Doc: "the response status is in range (redirects are not followed) and the body contains `contains`",
			Options: []Option{
				{Name: "url", Required: true, Doc: "http:// or https:// URL; without a scheme, http://"},
				{Name: "method", Default: "GET", Doc: "GET or HEAD"},
				{Name: "status", Default: "200-399", Arg: "RANGE", Validate: validStatus, Doc: "accepted statuses: `200`, `200-299` or `2xx`"},
				{Name: "contains", Arg: "TEXT", Doc: "text the body must contain (in its first MiB)"},
				{Name: "header", Kind: Header, Arg: "'NAME: VALUE'", Doc: "request header, repeatable (in YAML a list or a mapping)",
					Aliases: []Alias{{Name: "H"}, {Name: "headers", Deprecated: true}}},
				insecure, caFile,
				{Name: "server_name", Arg: "NAME", Doc: "name verified in the server's certificate"},
				{Name: "cert_file", Arg: "FILE", Doc: "client certificate (PEM), with key_file"},
				{Name: "key_file", Arg: "FILE", Doc: "client key (PEM)"},
				{Name: "proxy", Kind: Bool, Doc: "go through HTTP_PROXY/HTTPS_PROXY, honouring NO_PROXY (off: never proxied)"},
			},
			New: newHTTP,
		},
		{
			Name: "vitals", Args: []string{"url"}, Timeout: 10 * time.Second, SelfTimed: true,
			Doc: "a Vitals health server answers 200; otherwise the failing checks are named from its `[-]name failed` lines",
			Options: []Option{
				{Name: "url", Default: DefaultVitalsURL, Doc: "the endpoint to ask"},
				insecure, caFile,
			},
			New: newVitals,
		},
		{
			Name: "tcp", Args: []string{"address"}, Timeout: 5 * time.Second, SelfTimed: true,
			Doc: "a TCP connection opens",
			Options: []Option{
				{Name: "address", Required: true, Arg: "HOST:PORT", Doc: "host:port to dial"},
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.TCP(checks.TCPOptions{Address: v.String("address"), Timeout: v.Timeout()})
			},
		},
		portType("port", false, "a process matching PROCESS holds a TCP or UDP socket whose local or remote port is one of PORTS (connected to RabbitMQ on 5672, or listening)"),
		portType("listen", true, "a process matching PROCESS listens on one of PORTS (TCP in LISTEN, or a bound UDP socket)"),
		{
			Name: "socket", Args: []string{"process", "path"},
			Doc: "a process matching PROCESS holds the unix socket bound to PATH (`@name` for an abstract socket)",
			Options: []Option{
				{Name: "process", Doc: "process that must hold the socket (any process when empty)"},
				{Name: "path", Required: true, Doc: "path the socket is bound to"},
				cmdline,
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.UnixSocket(checks.UnixSocketOptions{Path: v.String("path"),
					Process: checks.ProcessMatch{Name: v.String("process"), Cmdline: v.Bool("cmdline")}})
			},
		},
		{
			Name: "process", Args: []string{"process"},
			Doc: "a process matching PROCESS runs (never the checking process itself)",
			Options: []Option{
				{Name: "process", Required: true, Doc: "command name, argv[0] or script base name"},
				cmdline,
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.Process(checks.ProcessOptions{Match: checks.ProcessMatch{Name: v.String("process"), Cmdline: v.Bool("cmdline")}})
			},
		},
		{
			Name: "file", Args: []string{"path"},
			Doc: "PATH exists and was modified within `max_age` (a heartbeat file)",
			Options: []Option{
				{Name: "path", Required: true, Doc: "the file"},
				{Name: "max_age", Kind: Duration, Default: "60s", Arg: "AGE", Doc: "most time since the last modification"},
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.File(checks.FileOptions{Path: v.String("path"), MaxAge: v.Duration("max_age")})
			},
		},
		{
			Name: "exec", Args: []string{"command"}, Rest: true, Timeout: 10 * time.Second, SelfTimed: true,
			Doc: "COMMAND exits with `exit_code`; its output (up to 4 KiB) is the reason otherwise; at the timeout its whole process group is killed",
			Options: []Option{
				{Name: "command", Kind: Strings, Required: true, Arg: "COMMAND", Doc: "program (looked up in PATH) and its arguments"},
				{Name: "env", Kind: Strings, Arg: "KEY=VALUE", Doc: "environment of the command (replaces the inherited one)"},
				{Name: "dir", Arg: "DIR", Doc: "working directory"},
				{Name: "exit_code", Kind: Int, Default: "0", Arg: "N", Doc: "exit code that counts as healthy"},
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.Exec(checks.ExecOptions{Command: v.Strings("command"), Env: v.Strings("env"), Dir: v.String("dir"),
					ExitCode: int(v.Int("exit_code")), Timeout: v.Timeout()})
			},
		},
		{
			Name: "capability", Args: []string{"capabilities"},
			Doc: "the capabilities (`NET_ADMIN`, `cap_net_raw`) are in the effective set of the checking process",
			Options: []Option{
				{Name: "capabilities", Kind: Strings, Required: true, Arg: "CAP", Doc: "capability names"},
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.Capability(checks.CapabilityOptions{Names: v.Strings("capabilities")})
			},
		},
		{
			Name: "memory", Args: []string{"limit_mib"},
			Doc: "the memory cgroup of the checking process (v2 `memory.current`, v1 `memsw`/`usage_in_bytes`), or its RSS, uses at most `limit_mib` MiB",
			Options: []Option{
				{Name: "limit_mib", Kind: Int, Required: true, Arg: "MIB", Doc: "most MiB allowed; -1 disables the check"},
				{Name: "source", Default: string(checks.MemoryCgroup), Arg: "SOURCE", Doc: "`cgroup` or `rss` (of the checking process)",
					Aliases: []Alias{{Name: "rss", Value: string(checks.MemoryRSS), Deprecated: true}}},
				{Name: "cgroup_path", Arg: "DIR", Doc: "cgroup directory (found from /proc/self/cgroup when empty)",
					Aliases: []Alias{{Name: "cg_path", Deprecated: true}}},
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.Memory(checks.MemoryOptions{LimitMiB: v.Int("limit_mib"), Source: checks.MemorySource(v.String("source")),
					CgroupPath: v.String("cgroup_path")})
			},
		},
		{
			Name: "goroutines", InProcess: true,
			Doc: "the checking process runs at most `max` goroutines (a steady climb is a leak)",
			Options: []Option{
				{Name: "max", Kind: Int, Required: true, Arg: "N", Doc: "most goroutines allowed"},
			},
			New: func(v *Values) (checks.Func, error) {
				return checks.Goroutines(checks.GoroutinesOptions{Max: int(v.Int("max"))})
			},
		},
	}
}

// portType declares port (any socket, with a listen option) and listen (listening sockets only).
func portType(name string, listen bool, doc string) Type {
	opts := []Option{
		{Name: "process", Doc: "process that must hold the socket (any process when empty)"},
		{Name: "ports", Kind: Ports, Required: true, Arg: "PORT", Doc: "ports, any of which will do (`5671,5672` is two)"},
		{Name: "protocols", Kind: Strings, Arg: "PROTO", Doc: "`tcp`, `udp` (default both; IPv4 and IPv6 each)",
			Aliases: []Alias{{Name: "tcp", Value: "tcp", Deprecated: true}, {Name: "udp", Value: "udp", Deprecated: true}}},
		cmdline,
	}
	if !listen {
		opts = append(opts, Option{Name: "listen", Kind: Bool, Doc: "only a listening socket on a local port counts (the listen type)"})
	}
	return Type{
		Name: name, Args: []string{"process", "ports"}, Doc: doc, Options: opts,
		New: func(v *Values) (checks.Func, error) {
			return checks.Port(checks.PortOptions{Process: checks.ProcessMatch{Name: v.String("process"), Cmdline: v.Bool("cmdline")},
				Ports: v.Ports("ports"), Listen: listen || v.Bool("listen"), Protocols: v.Strings("protocols")})
		},
	}
}

func withScheme(u string) string {
	if !strings.Contains(u, "://") {
		return "http://" + u
	}
	return u
}

func newHTTP(v *Values) (checks.Func, error) {
	o := checks.HTTPOptions{URL: withScheme(v.String("url")), Method: v.String("method"), Contains: v.String("contains"),
		Header: v.Header("header"), Insecure: v.Bool("insecure"), CAFile: v.String("ca_file"), ServerName: v.String("server_name"),
		CertFile: v.String("cert_file"), KeyFile: v.String("key_file"), Proxy: v.Bool("proxy"), Timeout: v.Timeout()}
	o.StatusMin, o.StatusMax, _ = checks.ParseStatusRange(v.String("status")) // validated
	return checks.HTTP(o)
}

func validStatus(s string) error {
	_, _, err := checks.ParseStatusRange(s)
	return err
}

func newVitals(v *Values) (checks.Func, error) {
	return checks.HTTP(checks.HTTPOptions{URL: withScheme(v.String("url")), Insecure: v.Bool("insecure"), CAFile: v.String("ca_file"),
		Timeout: v.Timeout(), Judge: judgeVitals, Header: http.Header{"Accept": {"text/plain"}}})
}

func judgeVitals(status int, body []byte) error {
	if status == http.StatusOK {
		return nil
	}
	if failing := failingChecks(body); len(failing) > 0 {
		return fmt.Errorf("status %d, failing: %s", status, strings.Join(failing, ", "))
	}
	return fmt.Errorf("status %d", status)
}

// failingChecks names the failing checks in a Kubernetes-style verbose body: the
// "[-]name failed: ..." lines. (The check asks for text, which every Vitals server and the
// Kubernetes apiserver serve; a JSON body yields the status alone.)
func failingChecks(body []byte) []string {
	var names []string
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "[-]"); ok {
			name, _, _ := strings.Cut(rest, " ")
			names = append(names, name)
		}
	}
	return names
}

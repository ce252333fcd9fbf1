package healthcheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// Check is one parsed check, ready to run.
type Check struct {
	// Kind is the form's name: http, vitals, port, listen, socket, process, file, tcp,
	// capability or memory.
	Kind string
	// Args are the words the check was parsed from (for debug output).
	Args []string
	// Run is the check.
	Run checks.Func
}

// Env reads an environment variable (os.Getenv in the command; a map in tests).
type Env func(string) string

// ErrHelp is returned by ParseArgs for -h/--help.
var ErrHelp = errors.New("help requested")

// Usage is printed for --help.
const Usage = `usage: healthcheck CHECK [-- CHECK]...      all checks must pass
       healthcheck --config FILE              checks from a YAML file
       healthcheck                            no arguments (e.g. run as /openstack/healthcheck):
                                              checks from $HEALTHCHECK_CONFIG, else ` + DefaultConfigPath + `
checks:
  http URL [--status 200-399] [--contains TEXT] [--timeout 10s] [--insecure] [--cacert FILE]
           [--method GET|HEAD] [--header 'Name: value'] [--proxy]
  vitals [URL]                 a Vitals health server (default ` + DefaultVitalsURL + `)
  port PROCESS PORT...         PROCESS holds a TCP/UDP socket with one of the ports (local or remote)
  listen PROCESS PORT...       PROCESS listens on one of the ports (TCP LISTEN or bound UDP)
  socket PROCESS PATH          PROCESS holds the unix socket bound to PATH
  process NAME                 a process named NAME runs   (port/listen/socket/process: [--cmdline])
  file PATH [--max-age 60s]    PATH was modified within the age
  tcp HOST:PORT [--timeout 5s] a TCP connection opens
  capability CAP...            the capabilities are in the effective set (e.g. NET_ADMIN)
  memory MIB [--rss] [--cg-path DIR]   the container's memory cgroup uses at most MIB
environment: HEALTHCHECK_CURL_MAX_TIME (seconds, default timeout of http/vitals),
  HEALTHCHECK_USE_PROXY=1 (proxies for http), HEALTHCHECK_DEBUG=1 (details on stderr)
`

// flagSpec describes the flags a form accepts: name -> takes a value.
type flagSpec map[string]bool

// words splits a form's arguments into positionals and flags ("--name value", "--name=value",
// a single dash works too). Repeated flags keep every value.
func words(args []string, spec flagSpec) (pos []string, flags map[string][]string, err error) {
	flags = map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := spec[name]
		if !known {
			return nil, nil, fmt.Errorf("unknown flag %s", a)
		}
		switch {
		case takesValue && !hasVal:
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			val = args[i]
		case !takesValue && hasVal:
			b, err := strconv.ParseBool(val)
			if err != nil {
				return nil, nil, fmt.Errorf("flag --%s: %q is not a boolean", name, val)
			}
			if !b {
				val = "false"
			}
		case !takesValue:
			val = "true"
		}
		flags[name] = append(flags[name], val)
	}
	return pos, flags, nil
}

func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

// last returns the last value of a flag.
func last(flags map[string][]string, name string) (string, bool) {
	v := flags[name]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func boolFlag(flags map[string][]string, name string) bool {
	v, _ := last(flags, name)
	return v == "true"
}

// parseDuration accepts Go durations ("10s", "1m30s") and bare seconds ("10", "0.5"), as
// TripleO's scripts pass them.
func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f <= 0 || f > 1e6 {
			return 0, fmt.Errorf("duration %q: expected a positive number of seconds", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("duration %q: expected a positive duration such as 10s", s)
	}
	return d, nil
}

func durationFlag(flags map[string][]string, name string, def time.Duration) (time.Duration, error) {
	v, ok := last(flags, name)
	if !ok {
		return def, nil
	}
	d, err := parseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", name, err)
	}
	return d, nil
}

// truthy reads an on/off environment variable.
func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on", "y":
		return true
	}
	return false
}

// httpTimeout is the default timeout of http and vitals checks: HEALTHCHECK_CURL_MAX_TIME (in
// seconds, as TripleO's healthcheck_curl reads it) or 10s.
func httpTimeout(env Env) (time.Duration, error) {
	v := strings.TrimSpace(env("HEALTHCHECK_CURL_MAX_TIME"))
	if v == "" {
		return 10 * time.Second, nil
	}
	d, err := parseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("HEALTHCHECK_CURL_MAX_TIME: %w", err)
	}
	return d, nil
}

// ParseArgs parses checks from the command line (without the program name): one or more forms
// separated by "--".
func ParseArgs(args []string, env Env) ([]Check, error) {
	if len(args) == 0 {
		return nil, errors.New("no check given (try: healthcheck --help)")
	}
	var out []Check
	start := 0
	for i := 0; i <= len(args); i++ {
		if i < len(args) && args[i] != "--" {
			continue
		}
		group := args[start:i]
		start = i + 1
		if len(group) == 0 {
			return nil, errors.New("empty check between separators")
		}
		c, err := parseForm(group, env)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// parseForm parses one form: the kind, then its arguments.
func parseForm(args []string, env Env) (Check, error) {
	kind := args[0]
	if kind == "-h" || kind == "--help" || kind == "help" {
		return Check{}, ErrHelp
	}
	build, ok := forms[kind]
	if !ok {
		return Check{}, fmt.Errorf("unknown check %q (expected http, vitals, port, listen, socket, process, file, tcp, capability or memory)", kind)
	}
	pos, flags, err := words(args[1:], build.flags)
	if err != nil {
		return Check{}, fmt.Errorf("%s: %w", kind, err)
	}
	if boolFlag(flags, "help") || boolFlag(flags, "h") {
		return Check{}, ErrHelp
	}
	run, err := build.parse(pos, flags, env)
	if err != nil {
		return Check{}, fmt.Errorf("%s: %w", kind, err)
	}
	return Check{Kind: kind, Args: args, Run: run}, nil
}

type form struct {
	flags flagSpec
	parse func(pos []string, flags map[string][]string, env Env) (checks.Func, error)
}

var helpFlags = flagSpec{"help": false, "h": false}

func withHelp(s flagSpec) flagSpec {
	for k, v := range helpFlags {
		s[k] = v
	}
	return s
}

// forms maps each kind to its flags and parser (a composite literal: no work at init).
var forms = map[string]form{
	"http": {withHelp(flagSpec{"status": true, "contains": true, "timeout": true, "insecure": false, "k": false,
		"proxy": false, "cacert": true, "method": true, "header": true, "H": true}), parseHTTP},
	"vitals":     {withHelp(flagSpec{"timeout": true, "insecure": false, "cacert": true}), parseVitals},
	"port":       {withHelp(flagSpec{"cmdline": false, "tcp": false, "udp": false}), parsePort(false)},
	"listen":     {withHelp(flagSpec{"cmdline": false, "tcp": false, "udp": false}), parsePort(true)},
	"socket":     {withHelp(flagSpec{"cmdline": false}), parseSocket},
	"process":    {withHelp(flagSpec{"cmdline": false}), parseProcess},
	"file":       {withHelp(flagSpec{"max-age": true}), parseFile},
	"tcp":        {withHelp(flagSpec{"timeout": true}), parseTCP},
	"capability": {withHelp(flagSpec{}), parseCapability},
	"memory":     {withHelp(flagSpec{"rss": false, "cg-path": true}), parseMemory},
}

func nArgs(pos []string, min, max int, what string) error {
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		if len(pos) < min {
			return fmt.Errorf("expected %s", what)
		}
		return fmt.Errorf("unexpected argument %q (expected %s)", pos[max], what)
	}
	return nil
}

func parseHTTP(pos []string, flags map[string][]string, env Env) (checks.Func, error) {
	if err := nArgs(pos, 1, 1, "a URL"); err != nil {
		return nil, err
	}
	opts := checks.HTTPOptions{
		URL:      pos[0],
		Insecure: boolFlag(flags, "insecure") || boolFlag(flags, "k"),
		Proxy:    boolFlag(flags, "proxy") || truthy(env("HEALTHCHECK_USE_PROXY")),
	}
	if !strings.Contains(opts.URL, "://") {
		opts.URL = "http://" + opts.URL
	}
	var err error
	if opts.Timeout, err = httpTimeout(env); err != nil {
		return nil, err
	}
	if opts.Timeout, err = durationFlag(flags, "timeout", opts.Timeout); err != nil {
		return nil, err
	}
	if s, ok := last(flags, "status"); ok {
		if opts.StatusMin, opts.StatusMax, err = checks.ParseStatusRange(s); err != nil {
			return nil, fmt.Errorf("--status: %w", err)
		}
	}
	opts.Contains, _ = last(flags, "contains")
	opts.CAFile, _ = last(flags, "cacert")
	opts.Method, _ = last(flags, "method")
	for _, h := range append(flags["header"], flags["H"]...) {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--header %q: expected 'Name: value'", h)
		}
		if opts.Header == nil {
			opts.Header = map[string][]string{}
		}
		k = canonicalHeader(strings.TrimSpace(k))
		opts.Header[k] = append(opts.Header[k], strings.TrimSpace(v))
	}
	return checks.HTTP(opts)
}

// canonicalHeader is textproto's canonical form for simple ASCII names.
func canonicalHeader(k string) string {
	b := []byte(strings.ToLower(k))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '-'
	}
	return string(b)
}

func parsePort(listen bool) func([]string, map[string][]string, Env) (checks.Func, error) {
	return func(pos []string, flags map[string][]string, _ Env) (checks.Func, error) {
		if err := nArgs(pos, 2, -1, "PROCESS PORT..."); err != nil {
			return nil, err
		}
		opts := checks.PortOptions{Process: checks.ProcessMatch{Name: pos[0], Cmdline: boolFlag(flags, "cmdline")}, Listen: listen}
		if pos[0] == "" {
			return nil, errors.New("empty process name")
		}
		for _, p := range pos[1:] {
			for _, f := range strings.Split(p, ",") { // "5671,5672" as TripleO's scripts write it
				n, err := strconv.Atoi(f)
				if err != nil || n < 1 || n > 65535 {
					return nil, fmt.Errorf("port %q: expected a number 1-65535", f)
				}
				opts.Ports = append(opts.Ports, n)
			}
		}
		if boolFlag(flags, "tcp") {
			opts.Protocols = append(opts.Protocols, "tcp")
		}
		if boolFlag(flags, "udp") {
			opts.Protocols = append(opts.Protocols, "udp")
		}
		return checks.Port(opts)
	}
}

func parseSocket(pos []string, flags map[string][]string, _ Env) (checks.Func, error) {
	if err := nArgs(pos, 2, 2, "PROCESS PATH"); err != nil {
		return nil, err
	}
	if pos[0] == "" {
		return nil, errors.New("empty process name")
	}
	return checks.UnixSocket(checks.UnixSocketOptions{
		Process: checks.ProcessMatch{Name: pos[0], Cmdline: boolFlag(flags, "cmdline")}, Path: pos[1]})
}

func parseProcess(pos []string, flags map[string][]string, _ Env) (checks.Func, error) {
	if err := nArgs(pos, 1, 1, "a process NAME"); err != nil {
		return nil, err
	}
	return checks.Process(checks.ProcessOptions{Match: checks.ProcessMatch{Name: pos[0], Cmdline: boolFlag(flags, "cmdline")}})
}

func parseFile(pos []string, flags map[string][]string, _ Env) (checks.Func, error) {
	if err := nArgs(pos, 1, 1, "a file PATH"); err != nil {
		return nil, err
	}
	age, err := durationFlag(flags, "max-age", 60*time.Second)
	if err != nil {
		return nil, err
	}
	return checks.File(checks.FileOptions{Path: pos[0], MaxAge: age})
}

func parseTCP(pos []string, flags map[string][]string, _ Env) (checks.Func, error) {
	if err := nArgs(pos, 1, 1, "HOST:PORT"); err != nil {
		return nil, err
	}
	timeout, err := durationFlag(flags, "timeout", 5*time.Second)
	if err != nil {
		return nil, err
	}
	return checks.TCP(checks.TCPOptions{Address: pos[0], Timeout: timeout})
}

func parseCapability(pos []string, _ map[string][]string, _ Env) (checks.Func, error) {
	if err := nArgs(pos, 1, -1, "one or more capability names"); err != nil {
		return nil, err
	}
	return checks.Capability(checks.CapabilityOptions{Names: pos})
}

func parseMemory(pos []string, flags map[string][]string, _ Env) (checks.Func, error) {
	if err := nArgs(pos, 1, 1, "a limit in MiB"); err != nil {
		return nil, err
	}
	limit, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("limit %q: expected a whole number of MiB or -1", pos[0])
	}
	opts := checks.MemoryOptions{LimitMiB: limit, Source: checks.MemoryCgroup}
	if boolFlag(flags, "rss") {
		opts.Source = checks.MemoryRSS
	}
	opts.CgroupPath, _ = last(flags, "cg-path")
	return checks.Memory(opts)
}

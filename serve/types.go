package serve

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/health/checks"
)

// checkType is one "type:" of the config: its parameters (a struct decoded strictly from the
// entry's other keys) and how to build the check body from them.
type checkType struct {
	params func() any
	build  func(p any) (checks.Func, error)
}

// typed adapts a constructor over a concrete params type.
func typed[P any](build func(p *P) (checks.Func, error)) checkType {
	return checkType{
		params: func() any { return new(P) },
		build:  func(p any) (checks.Func, error) { return build(p.(*P)) },
	}
}

// Parameters of each type. Field docs are the user documentation (docs/serve.md).

type httpParams struct {
	URL        string            `yaml:"url" config:"required"`
	Method     string            `yaml:"method"`
	Headers    map[string]string `yaml:"headers"`
	Status     string            `yaml:"status"` // "200", "200-399"
	Contains   string            `yaml:"contains"`
	Insecure   bool              `yaml:"insecure"`
	CAFile     string            `yaml:"ca_file"`
	ServerName string            `yaml:"server_name"`
	CertFile   string            `yaml:"cert_file"`
	KeyFile    string            `yaml:"key_file"`
	Proxy      bool              `yaml:"proxy"`
}

type tcpParams struct {
	Address string `yaml:"address" config:"required"`
}

type portParams struct {
	Ports     []config.Port `yaml:"ports" config:"required"`
	Process   string        `yaml:"process"`
	Cmdline   bool          `yaml:"cmdline"`
	Listen    *bool         `yaml:"listen"` // default true
	Protocols []string      `yaml:"protocols"`
}

type socketParams struct {
	Path    string `yaml:"path" config:"required"`
	Process string `yaml:"process"`
	Cmdline bool   `yaml:"cmdline"`
}

type processParams struct {
	Process string `yaml:"process" config:"required"`
	Cmdline bool   `yaml:"cmdline"`
}

type fileParams struct {
	Path   string        `yaml:"path" config:"required"`
	MaxAge time.Duration `yaml:"max_age" config:"required"`
}

type execParams struct {
	Command  []string `yaml:"command" config:"required"`
	Env      []string `yaml:"env"`
	Dir      string   `yaml:"dir"`
	ExitCode int      `yaml:"exit_code"`
}

type capabilityParams struct {
	Capabilities []string `yaml:"capabilities" config:"required"`
}

type memoryParams struct {
	LimitMiB   *int64 `yaml:"limit_mib" config:"required"`
	Source     string `yaml:"source"` // rss (default) or cgroup
	CgroupPath string `yaml:"cgroup_path"`
}

type goroutinesParams struct {
	Max int `yaml:"max" config:"required"`
}

var types = map[string]checkType{
	"http": typed(func(p *httpParams) (checks.Func, error) {
		o := checks.HTTPOptions{URL: p.URL, Method: p.Method, Contains: p.Contains, Insecure: p.Insecure,
			CAFile: p.CAFile, ServerName: p.ServerName, CertFile: p.CertFile, KeyFile: p.KeyFile, Proxy: p.Proxy}
		if p.Status != "" {
			lo, hi, err := checks.ParseStatusRange(p.Status)
			if err != nil {
				return nil, fmt.Errorf("status: %w", err)
			}
			o.StatusMin, o.StatusMax = lo, hi
		}
		if len(p.Headers) > 0 {
			o.Header = http.Header{}
			for k, v := range p.Headers {
				o.Header.Set(k, v)
			}
		}
		return checks.HTTP(o)
	}),
	"tcp": typed(func(p *tcpParams) (checks.Func, error) {
		return checks.TCP(checks.TCPOptions{Address: p.Address})
	}),
	"port": typed(func(p *portParams) (checks.Func, error) {
		o := checks.PortOptions{Process: checks.ProcessMatch{Name: p.Process, Cmdline: p.Cmdline},
			Listen: p.Listen == nil || *p.Listen, Protocols: p.Protocols}
		for _, port := range p.Ports {
			o.Ports = append(o.Ports, int(port))
		}
		return checks.Port(o)
	}),
	"socket": typed(func(p *socketParams) (checks.Func, error) {
		return checks.UnixSocket(checks.UnixSocketOptions{Path: p.Path,
			Process: checks.ProcessMatch{Name: p.Process, Cmdline: p.Cmdline}})
	}),
	"process": typed(func(p *processParams) (checks.Func, error) {
		return checks.Process(checks.ProcessOptions{Match: checks.ProcessMatch{Name: p.Process, Cmdline: p.Cmdline}})
	}),
	"file": typed(func(p *fileParams) (checks.Func, error) {
		return checks.File(checks.FileOptions{Path: p.Path, MaxAge: p.MaxAge})
	}),
	"exec": typed(func(p *execParams) (checks.Func, error) {
		return checks.Exec(checks.ExecOptions{Command: p.Command, Env: p.Env, Dir: p.Dir, ExitCode: p.ExitCode})
	}),
	"capability": typed(func(p *capabilityParams) (checks.Func, error) {
		return checks.Capability(checks.CapabilityOptions{Names: p.Capabilities})
	}),
	"memory": typed(func(p *memoryParams) (checks.Func, error) {
		return checks.Memory(checks.MemoryOptions{LimitMiB: *p.LimitMiB, Source: checks.MemorySource(p.Source),
			CgroupPath: p.CgroupPath})
	}),
	"goroutines": typed(func(p *goroutinesParams) (checks.Func, error) {
		return checks.Goroutines(checks.GoroutinesOptions{Max: p.Max})
	}),
}

// decode checks the entry's type-specific keys strictly, decodes them and builds the check body
// (kept in ch.run). It returns the errors found.
func (t checkType) decode(file, field string, ch *CheckConfig) config.Errors {
	p := t.params()
	own := config.StructKeys(p)
	ownSet := make(map[string]bool, len(own))
	for _, k := range own {
		ownSet[k] = true
	}
	var out config.Errors
	rest := yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: ch.Self.Line, Column: ch.Self.Column}
	for i := 0; i+1 < len(ch.Params.Content); i += 2 {
		k := ch.Params.Content[i]
		if !ownSet[k.Value] {
			all := append(append([]string(nil), commonKeys...), own...)
			out = append(out, config.NodeError(file, k, field+"."+k.Value,
				"unknown field for a check of type %q (expected one of: %s)", ch.Type, strings.Join(sortUnique(all), ", ")))
			continue
		}
		rest.Content = append(rest.Content, k, ch.Params.Content[i+1])
	}
	if err := config.DecodeNode(file, field, &rest, p); err != nil {
		out = append(out, config.Flatten(err)...)
	}
	if len(out) > 0 {
		return out
	}
	run, err := t.build(p)
	if err != nil {
		return config.Errors{config.NodeError(file, &ch.Self, field, "invalid %s check: %v", ch.Type, err)}
	}
	ch.run = run
	return nil
}

func sortUnique(v []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range v {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

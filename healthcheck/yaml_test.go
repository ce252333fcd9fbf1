package healthcheck

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// dump prints a parsed tree in a form comparable with yaml.v3's.
func dump(n *node) string {
	switch n.kind {
	case listNode:
		parts := make([]string, len(n.items))
		for i, c := range n.items {
			parts[i] = dump(c)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case mapNode:
		parts := make([]string, 0, len(n.items)/2)
		for i := 0; i+1 < len(n.items); i += 2 {
			parts = append(parts, dump(n.items[i])+":"+dump(n.items[i+1]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	if n.null {
		return "null"
	}
	return fmt.Sprintf("%q", n.value)
}

// dumpV3 prints yaml.v3's tree the same way.
func dumpV3(n *yaml.Node) string {
	switch n.Kind {
	case 0: // an empty document
		return "null"
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return "null"
		}
		return dumpV3(n.Content[0])
	case yaml.SequenceNode:
		parts := make([]string, len(n.Content))
		for i, c := range n.Content {
			parts[i] = dumpV3(c)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case yaml.MappingNode:
		parts := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, dumpV3(n.Content[i])+":"+dumpV3(n.Content[i+1]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case yaml.ScalarNode:
		if n.Tag == "!!null" && n.Style == 0 {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return fmt.Sprintf("<kind %d>", n.Kind)
}

var yamlSeeds = []string{
	"",
	"# only a comment\n",
	"checks:\n  - http: http://127.0.0.1:8080/health\n    status: 200-399\n    timeout: 5s\n",
	"---\nchecks:\n- port: nova-conductor\n  ports: [5671, 5672]\n- [listen, haproxy, \"8080\"]\n",
	"checks:\n  - socket: libvirtd\n    path: '/var/run/libvirt/libvirt-sock'  # comment\n  - file: /x\n    max_age: 60\n",
	"checks:\n  -\n    process: x\n  - vitals:\n  - vitals: ~\n",
	"a: \"tab\\there \\u00e9 \\\" q\"\nb: 'it''s'\nc: x#y\nd: x # y\ne: []\nf: [ 'a b' , \"c\" ]\n",
	"a:\n  b:\n    c: d\n  e: f\n",
	"- a\n- b\n-   - c\n",
	"key: value: other\n",
	"a: &x 1\nb: *x\n",
	"a: |\n  text\n",
	"a: {b: c}\n",
	"a:\tb\n",
	"a: b\n  c: d\n",
	"a: b\na: c\n",
	"a: 'unterminated\n",
	"a: [b, c\n",
	"  a: b\n",
	"\"quoted key\": v\n'k2': [x]\n",
	"http://x: y\n",
	"a: -1\nb: -x\nc: :x\n",
}

func TestYAMLAgreesWithYAMLv3(t *testing.T) {
	for _, s := range yamlSeeds {
		compareWithV3(t, s)
	}
}

func compareWithV3(t *testing.T, s string) {
	t.Helper()
	ours, err := parseYAML([]byte(s))
	if err != nil {
		return // refusing is always allowed
	}
	var v3 yaml.Node
	if err := yaml.Unmarshal([]byte(s), &v3); err != nil {
		t.Fatalf("we accept what yaml.v3 refuses (%v): %q", err, s)
	}
	if a, b := dump(ours), dumpV3(&v3); a != b {
		t.Fatalf("different trees for %q:\nours %s\nv3   %s", s, a, b)
	}
}

func TestYAMLErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a: b\n\tc: d\n", "line 2: tabs are not allowed"},
		{"a: &x 1\n", "line 1: unsupported YAML"},
		{"a: |\n  x\n", "line 1: unsupported YAML"},
		{"a: {b: c}\n", "line 1: unsupported YAML"},
		{"a: b\n  c: d\n", "line 2: unexpected indentation"},
		{"a: b\na: c\n", `line 2: key "a" repeated`},
		{"a: 'x\n", "line 1: unterminated quoted value"},
		{"a: [x, y\n", "line 1: unterminated [list]"},
		{"a: b: c\n", `line 1: a value may not hold ": " unquoted`},
		{"  a: b\n", "line 1: the document must start at column 0"},
		{"a:\n  - x\n  y: z\n", "line 3: expected a list entry"},
	} {
		_, err := parseYAML([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name, in, kinds, wantErr string
	}{
		{"every mapping form", `checks:
  - http: http://127.0.0.1:8080/health
    status: 200-399
    contains: ok
    insecure: false
    header: ["X-A: 1", "X-B: 2"]
  - vitals:
  - port: nova-conductor
    ports: [5671, 5672]
    cmdline: true
  - listen: haproxy
    ports: 8080
  - socket: libvirtd
    path: /var/run/libvirt/libvirt-sock
  - process: nova-compute
  - file: /var/lib/svc/heartbeat
    max_age: 60s
  - tcp: 127.0.0.1:5672
  - capability: [NET_ADMIN, NET_RAW]
  - memory: 512
    cg_path: /sys/fs/cgroup
`, "http vitals port listen socket process file tcp capability memory", ""},
		{"options before the type", "checks:\n  - ports: [8080]\n    listen: haproxy\n  - exec: [sh, -c, 'exit 0']\n    exit_code: 0\n", "listen exec", ""},
		{"a mapping for a plain option", "checks:\n  - file: /x\n    max_age:\n      a: b\n", "", "max_age: line 4: expected a value or a list of values"},
		{"word lists", "checks:\n  - [http, 'http://[::1]:8080/', --status, '200']\n  - [port, rabbit, '5672', --cmdline]\n", "http port", ""},
		{"empty", "", "", "empty config"},
		{"not a mapping", "- http: x\n", "", "line 1: expected a mapping with checks"},
		{"unknown top-level field", "checks:\n  - process: x\ninterval: 5s\n", "", `line 3: unknown top-level field (expected checks)`},
		{"no checks", "checks:\n", "", "line 1: checks: expected a list of checks"},
		{"unknown kind", "checks:\n  - ping: x\n", "", "line 2: no check kind"},
		{"two kinds", "checks:\n  - http: http://x/\n    port: y\n", "", "line 3: two kinds in one check: http and port"},
		{"bad flag", "checks:\n  - http: http://x/\n    colour: blue\n", "", "line 2: http: unknown option colour"},
		{"bad duration", "checks:\n  - file: /x\n    max_age: soon\n", "", `line 2: file: max_age: duration "soon"`},
		{"bad port", "checks:\n  - port: x\n    ports: [70000]\n", "", `line 2: port: ports: expected a port number (1-65535), got "70000"`},
		{"nested value", "checks:\n  - http:\n      url: x\n", "", "http: line 3: expected a value or a list of values"},
		{"a scalar item", "checks:\n  - http\n", "", "line 2: expected a check"},
		{"help", "checks:\n  - [http, --help]\n", "", "help is not a check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := ParseConfig([]byte(tc.in), env())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, c := range cs {
				kinds = append(kinds, c.Kind)
			}
			if got := strings.Join(kinds, " "); got != tc.kinds {
				t.Errorf("kinds %q, want %q", got, tc.kinds)
			}
		})
	}
}

// FuzzParseConfig: never panics; whatever our YAML reader accepts, yaml.v3 reads the same way;
// an error line stays one line within the limit.
func FuzzParseConfig(f *testing.F) {
	for _, s := range yamlSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		compareWithV3(t, s)
		cs, err := ParseConfig([]byte(s), env())
		if err != nil {
			line := InvalidLine(err)
			if len(line) >= MaxLine || strings.ContainsAny(line, "\n\r") {
				t.Fatalf("bad invalid line %q", line)
			}
			return
		}
		for _, c := range cs {
			if c.Run == nil || Registry().Lookup(c.Kind) == nil {
				t.Fatalf("bad check %+v", c)
			}
		}
	})
}

// FuzzParseArgs: never panics; a parsed check is runnable; errors fit one line.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"http http://127.0.0.1:8080/health --status 200-399 --contains ok --timeout 10s",
		"http http://[::1]:8080/ --insecure --proxy -- port nova 5672",
		"port nova-conductor 5671,5672 --tcp",
		"listen haproxy 8080 --udp --cmdline",
		"socket libvirtd /run/x.sock",
		"file /tmp/x --max-age=60",
		"vitals",
		"capability NET_ADMIN",
		"memory -1",
		"--config /etc/healthcheck.yaml",
		"http -- --",
		"tcp [::1]:22 --timeout 0.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Fields(s)
		cs, err := ParseArgs(args, env("HEALTHCHECK_CURL_MAX_TIME", "1"))
		if err != nil {
			line := InvalidLine(err)
			if len(line) >= MaxLine || strings.ContainsAny(line, "\n\r") {
				t.Fatalf("bad invalid line %q", line)
			}
			return
		}
		for _, c := range cs {
			if c.Run == nil || Registry().Lookup(c.Kind) == nil {
				t.Fatalf("bad check %+v", c)
			}
		}
	})
}

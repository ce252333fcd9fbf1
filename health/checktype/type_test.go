package checktype

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestBuiltinDeclarations: every type and option is documented, positional arguments name
// options, aliases do not collide with names, and the registry accepts them.
func TestBuiltinDeclarations(t *testing.T) {
	r, err := NewRegistry(Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range r.Names() {
		typ := r.Lookup(name)
		if typ.Doc == "" {
			t.Errorf("%s: no doc", name)
		}
		seen := map[string]bool{timeoutOption.Name: true}
		for _, o := range typ.Options {
			if o.Doc == "" {
				t.Errorf("%s.%s: no doc", name, o.Name)
			}
			if o.Name != Normalize(o.Name) || seen[o.Name] {
				t.Errorf("%s.%s: badly spelled or declared twice", name, o.Name)
			}
			seen[o.Name] = true
			if o.Default != "" && o.Validate != nil {
				if err := o.Validate(o.Default); err != nil {
					t.Errorf("%s.%s: default %q invalid: %v", name, o.Name, o.Default, err)
				}
			}
			if o.Default != "" && !o.Kind.List() {
				if err := check(o.Kind, o.Default); err != nil {
					t.Errorf("%s.%s: default %q invalid: %v", name, o.Name, o.Default, err)
				}
			}
		}
		for _, o := range typ.Options {
			for _, a := range o.Aliases {
				if seen[a.Name] {
					t.Errorf("%s: alias %s of %s is also an option", name, a.Name, o.Name)
				}
				seen[a.Name] = true
			}
		}
	}
	if _, err := NewRegistry(append(Builtin(), Builtin()[0])...); err == nil {
		t.Error("a type declared twice was accepted")
	}
}

func TestResolve(t *testing.T) {
	r, _ := NewRegistry(Builtin()...)
	tests := []struct {
		name, typ string
		in        Input
		want      map[string]any // option -> expected value (through the getter of its kind)
		warns     []string       // "alias->option"
		errs      []string       // Error() of each error
	}{
		{name: "positional and defaults", typ: "http", in: Input{Args: []string{"http://x/"}},
			want: map[string]any{"url": "http://x/", "method": "GET", "status": "200-399", "insecure": false, "timeout": 10 * time.Second}},
		{name: "the last scalar wins, lists accumulate", typ: "http",
			in:   Input{Args: []string{"x"}, Fields: []Field{{Key: "--method", Values: []string{"GET"}}, {Key: "method", Values: []string{"HEAD"}}, {Key: "H", Values: []string{"A: 1"}}, {Key: "header", Values: []string{"A: 2"}}}},
			want: map[string]any{"method": "HEAD", "header": []string{"A: 1", "A: 2"}}},
		{name: "deprecated aliases work and warn", typ: "memory",
			in:    Input{Args: []string{"512"}, Fields: []Field{{Key: "rss"}, {Key: "cg-path", Values: []string{"/sys/fs/cgroup"}}}},
			want:  map[string]any{"limit_mib": int64(512), "source": "rss", "cgroup_path": "/sys/fs/cgroup"},
			warns: []string{"rss->source", "cg_path->cgroup_path"}},
		{name: "a switch alias set false does nothing", typ: "port",
			in:    Input{Args: []string{"p", "80"}, Fields: []Field{{Key: "tcp", Values: []string{"false"}}}},
			want:  map[string]any{"protocols": []string(nil), "ports": []int{80}},
			warns: []string{"tcp->protocols"}},
		{name: "ports split on commas", typ: "listen", in: Input{Args: []string{"haproxy", "80,443", "8080"}},
			want: map[string]any{"ports": []int{80, 443, 8080}, "process": "haproxy"}},
		{name: "timeout: the field wins over the caller's", typ: "tcp",
			in:   Input{Args: []string{"x:1"}, Timeout: time.Second, Fields: []Field{{Key: "timeout", Values: []string{"3"}}}},
			want: map[string]any{"timeout": 3 * time.Second}},
		{name: "timeout: the caller's wins over the type's", typ: "tcp", in: Input{Args: []string{"x:1"}, Timeout: time.Second},
			want: map[string]any{"timeout": time.Second}},
		{name: "missing, unknown, invalid", typ: "file",
			in:   Input{Fields: []Field{{Key: "max_age", Values: []string{"soon"}, Line: 3}, {Key: "colour", Values: []string{"x"}, Line: 4}}},
			errs: []string{`max_age: duration "soon": expected a positive duration such as 10s`, "colour: unknown option for a check of type \"file\" (expected one of: max_age, path, timeout)", "path: missing required option"}},
		{name: "a list for a scalar", typ: "file", in: Input{Args: []string{"/x"}, Fields: []Field{{Key: "max_age", Values: []string{"1s", "2s"}, List: true}}},
			errs: []string{"max_age: expected a single value, got a list"}},
		{name: "too many words", typ: "tcp", in: Input{Args: []string{"a:1", "b:2"}},
			errs: []string{`unexpected argument "b:2" (expected HOST:PORT)`}},
		{name: "a bad item of a list", typ: "port", in: Input{Fields: []Field{{Key: "ports", Values: []string{"80", "0"}, List: true}}},
			errs: []string{`ports: expected a port number (1-65535), got "0"`}},
		{name: "rest takes the words as they are", typ: "exec", in: Input{Args: []string{"sh", "-c", "exit 0"}},
			want: map[string]any{"command": []string{"sh", "-c", "exit 0"}, "exit_code": int64(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			typ := r.Lookup(tc.typ)
			v, warns, errs := typ.Resolve(tc.in)
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, e.Error())
			}
			if !reflect.DeepEqual(gotErrs, tc.errs) {
				t.Errorf("errors %q, want %q", gotErrs, tc.errs)
			}
			var gotWarns []string
			for _, w := range warns {
				gotWarns = append(gotWarns, w.Alias+"->"+w.Option)
			}
			if !reflect.DeepEqual(gotWarns, tc.warns) {
				t.Errorf("warnings %q, want %q", gotWarns, tc.warns)
			}
			for name, want := range tc.want {
				var got any
				if name == "timeout" {
					got = v.Timeout()
				} else {
					o, _ := typ.Option(name)
					switch o.Kind {
					case String:
						got = v.String(name)
					case Bool:
						got = v.Bool(name)
					case Int:
						got = v.Int(name)
					case Duration:
						got = v.Duration(name)
					case Ports:
						got = v.Ports(name)
					default:
						got = v.Strings(name)
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", name, got, want)
				}
			}
		})
	}
}

func TestBuildReportsConstructorErrors(t *testing.T) {
	r, _ := NewRegistry(Builtin()...)
	_, _, err := r.Lookup("capability").Build(Input{Args: []string{"NET_WIZARD"}, ArgsLine: 7})
	var es Errors
	if !asErrors(err, &es) || len(es) != 1 || es[0].Key != "" || es[0].Line != 7 || !strings.Contains(es[0].Msg, `unknown capability "NET_WIZARD"`) {
		t.Fatalf("got %#v", err)
	}
	c, _, err := r.Lookup("goroutines").Build(Input{Fields: []Field{{Key: "max", Values: []string{"100000"}}}})
	if err != nil || c.Run(context.Background()) != nil || c.SelfTimed || c.Timeout != DefaultTimeout {
		t.Fatalf("goroutines: %+v %v", c, err)
	}
}

func asErrors(err error, es *Errors) bool {
	e, ok := err.(Errors)
	*es = e
	return ok
}

func TestUsage(t *testing.T) {
	r, _ := NewRegistry(Builtin()...)
	for typ, want := range map[string]string{"port": "PROCESS PORT...", "socket": "PROCESS PATH", "vitals": "[URL]", "exec": "COMMAND...", "goroutines": ""} {
		if got := r.Lookup(typ).Usage(); got != want {
			t.Errorf("%s: usage %q, want %q", typ, got, want)
		}
	}
}

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type testItem struct {
	Name     string        `yaml:"name" config:"required"`
	Interval time.Duration `yaml:"interval"`
	Port     Port          `yaml:"port"`
	Rest     yaml.Node     `yaml:",remain"`
}

type testDoc struct {
	Listen  string            `yaml:"listen"`
	Details bool              `yaml:"details"`
	Count   int               `yaml:"count"`
	Ratio   float64           `yaml:"ratio"`
	Tags    []string          `yaml:"tags"`
	Labels  map[string]string `yaml:"labels"`
	Items   []testItem        `yaml:"items"`
	Inner   *struct {
		Limit uint `yaml:"limit"`
	} `yaml:"inner"`
}

func TestDecodeYAML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want: substrings of each error, in order; nil means success.
		want  []string
		check func(t *testing.T, d *testDoc)
	}{
		{
			name: "valid",
			in: `listen: ":8080"
details: true
count: 3
ratio: 0.5
tags: [a, b]
labels: {x: y}
inner: {limit: 7}
items:
  - name: one
    interval: 1m30s
    port: 8080
    extra: 1
`,
			check: func(t *testing.T, d *testDoc) {
				if d.Listen != ":8080" || !d.Details || d.Count != 3 || d.Ratio != 0.5 || len(d.Tags) != 2 ||
					d.Labels["x"] != "y" || d.Inner == nil || d.Inner.Limit != 7 {
					t.Errorf("decoded %+v", d)
				}
				it := d.Items[0]
				if it.Name != "one" || it.Interval != 90*time.Second || it.Port != 8080 {
					t.Errorf("item %+v", it)
				}
				if it.Rest.Kind != yaml.MappingNode || len(it.Rest.Content) != 2 || it.Rest.Content[0].Value != "extra" {
					t.Errorf("remain %+v", it.Rest)
				}
			},
		},
		{name: "unknown field", in: "listen: x\nlisen: y\n", want: []string{"f.yaml:2: lisen: unknown field (expected one of: count, details, inner, items, labels, listen, ratio, tags)"}},
		{name: "bad duration", in: "items:\n  - name: a\n    interval: 10\n", want: []string{`f.yaml:3: items[0].interval: expected a duration with a unit, such as "10s"`}},
		{name: "negative duration", in: "items:\n  - name: a\n    interval: -1s\n", want: []string{`items[0].interval: expected a positive duration`}},
		{name: "missing field", in: "items:\n  - interval: 1s\n", want: []string{"f.yaml:2: items[0].name: missing required field"}},
		{name: "port zero", in: "items:\n  - name: a\n    port: 0\n", want: []string{`f.yaml:3: items[0].port: expected a port number (1-65535), got a value of 1 bytes (not shown)`}},
		{name: "port too big", in: "items:\n  - name: a\n    port: 70000\n", want: []string{`expected a port number (1-65535), got a value of 5 bytes (not shown)`}},
		{name: "port quoted", in: "items:\n  - name: a\n    port: \"80\"\n", want: []string{`expected a port number`}},
		{name: "bool", in: "details: maybe\n", want: []string{`f.yaml:1: details: expected true or false, got a value of 5 bytes (not shown)`}},
		{name: "int", in: "count: many\n", want: []string{`count: expected an integer, got a value of 4 bytes (not shown)`}},
		{name: "uint negative", in: "inner:\n  limit: -3\n", want: []string{`inner.limit: expected a non-negative integer`}},
		{name: "list expected", in: "tags: a\n", want: []string{`tags: expected a list, got a value of 1 bytes (not shown)`}},
		{name: "mapping expected", in: "items: [1]\n", want: []string{`items[0]: expected a mapping, got a value of 1 bytes (not shown)`}},
		{name: "string expected", in: "listen: [a]\n", want: []string{`listen: expected a string, got a list`}},
		{name: "twice", in: "count: 1\ncount: 2\n", want: []string{`f.yaml:2: count: field given twice`}},
		{name: "syntax", in: "listen: :\n  - x: [\n", want: []string{`f.yaml:`, `invalid YAML`}},
		{name: "empty", in: "", want: []string{`empty document`}},
		{name: "not a mapping", in: "- a\n", want: []string{`expected a mapping, got a list`}},
		{name: "several errors", in: "count: x\nbogus: 1\n", want: []string{`count: expected an integer`, `bogus: unknown field`}},
		{name: "alias", in: "tags: &t [a, b]\nitems:\n  - name: *t\n", want: []string{`items[0].name: expected a string, got a list`}},
		{name: "null keeps zero", in: "count: ~\ninner: null\n", check: func(t *testing.T, d *testDoc) {
			if d.Count != 0 || d.Inner != nil {
				t.Errorf("decoded %+v", d)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d testDoc
			err := DecodeYAML("f.yaml", []byte(tt.in), &d)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tt.check != nil {
					tt.check(t, &d)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error", err)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n%s\ndoes not contain\n%s", msg, w)
				}
			}
		})
	}
}

func TestDecodeYAMLAliasBomb(t *testing.T) {
	in := `a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
`
	// Walking every alias expansion would visit 9^7 nodes: the node limit must stop it.
	var out map[string][]testDoc
	err := DecodeYAML("bomb.yaml", []byte(in), &out)
	if err == nil {
		t.Fatal("no error")
	}
	if es := Flatten(err); len(es) > 51 {
		t.Fatalf("%d errors", len(es))
	}
	type nest []nest
	var deep map[string]nest
	err = DecodeYAML("bomb.yaml", []byte(strings.ReplaceAll(in, `"x"`, "[]")), &deep)
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadYAMLMissingFile(t *testing.T) {
	var d testDoc
	err := LoadYAML(filepath.Join(t.TempDir(), "nope.yaml"), &d)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "nope.yaml: read config") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadYAMLFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("count: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var d testDoc
	if err := LoadYAML(p, &d); err != nil || d.Count != 2 {
		t.Fatalf("got %v %+v", err, d)
	}
}

func TestFlatten(t *testing.T) {
	e1 := &Error{Msg: "a"}
	e2 := &Error{Msg: "b"}
	got := Flatten(errors.Join(e1, Errors{e2}, errors.New("c")))
	if len(got) != 3 || got[0] != e1 || got[1] != e2 || got[2].Msg != "c" {
		t.Fatalf("got %v", got)
	}
	if Flatten(nil) != nil {
		t.Fatal("nil")
	}
}

func FuzzDecodeYAML(f *testing.F) {
	f.Add("listen: \":8080\"\nitems:\n  - name: a\n    interval: 1s\n    port: 80\n")
	f.Add("a: &a [1]\nitems: *a\n")
	f.Add("items: [{name: [x]}]")
	f.Fuzz(func(t *testing.T, in string) {
		var d testDoc
		err := DecodeYAML("fuzz.yaml", []byte(in), &d)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error: %v", err, err)
			}
		}
	})
}

package serve

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/health/checks/kubernetes"
	"github.com/vitalsproject/vitals/health/checktype"
)

// Registry returns the check types serve offers: every built-in type, and those of the check
// packages with their own clients (Kubernetes).
var Registry = sync.OnceValue(func() *checktype.Registry {
	r, err := checktype.NewRegistry(append(checktype.Builtin(), kubernetes.Types()...)...)
	if err != nil {
		panic(err) // the built-in declarations are fixed; a test covers them
	}
	return r
})

// legacyDefaults are the defaults serve used before the check registry where the registry's
// differ. An entry that omits the option keeps serve's old default, with a warning asking to say
// it (or to use the listen type): no configuration changes meaning silently.
var legacyDefaults = []struct{ typ, option, value, hint string }{
	{"port", "listen", "true", "write type: listen, or listen: false for any socket on the ports"},
	{"memory", "source", "rss", "write source: rss, or source: cgroup"},
}

// decode resolves the entry's type-specific keys through the registry and builds the check body
// (kept in ch.run), bounded by timeout (the check's effective timeout). It returns the errors
// found and the warnings (deprecated spellings, legacy defaults).
func decode(file, field string, t *checktype.Type, ch *CheckConfig, timeout time.Duration) (config.Errors, []string) {
	var out config.Errors
	var warns []string
	in := checktype.Input{ArgsLine: ch.Self.Line, Timeout: timeout, Defaults: checktype.ConfigDefaults()}
	nodes := map[string]*yaml.Node{} // key as written -> its value node, for item locations
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(ch.Params.Content); i += 2 {
		k, v := ch.Params.Content[i], resolve(ch.Params.Content[i+1])
		f, err := paramField(t, k, v)
		if err != nil {
			out = append(out, config.NodeError(file, v, field+"."+k.Value, "%v", err))
			continue
		}
		nodes[k.Value], keys[k.Value] = v, k
		in.Fields = append(in.Fields, f)
	}
	for _, l := range legacyDefaults {
		if l.typ != t.Name || has(in.Fields, t, l.option) {
			continue
		}
		in.Fields = append(in.Fields, checktype.Field{Key: l.option, Values: []string{l.value}, Line: ch.Self.Line})
		warns = append(warns, fmt.Sprintf("%s:%d: %s.%s: not given; keeping serve's former default %s (the registry's is now %s): %s",
			file, ch.Self.Line, field, l.option, l.value, defaultOf(t, l.option), l.hint))
	}
	c, ws, err := t.Build(in)
	for _, w := range ws {
		use := w.Option
		if w.Value != "" {
			use += ": " + w.Value
		}
		warns = append(warns, fmt.Sprintf("%s:%d: %s.%s: deprecated spelling; use %s", file, w.Line, field, w.Alias, use))
	}
	var es checktype.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			out = append(out, entryError(file, field, t, ch, e, keys, nodes))
		}
	}
	if len(out) > 0 {
		return out, warns
	}
	ch.run = c.Run
	return nil, warns
}

// entryError locates and words one registry error as config errors do.
func entryError(file, field string, t *checktype.Type, ch *CheckConfig, e *checktype.Error, keys, nodes map[string]*yaml.Node) *config.Error {
	switch {
	case e.Key == "":
		return config.NodeError(file, &ch.Self, field, "invalid %s check: %s", t.Name, e.Msg)
	case e.Missing:
		return config.NodeError(file, &ch.Self, field+"."+e.Key, "missing required field")
	case e.Unknown:
		all := append(append([]string(nil), commonKeys...), t.OptionNames()...)
		return config.NodeError(file, keyNode(keys, e.Key, &ch.Self), field+"."+e.Key,
			"unknown field for a check of type %q (expected one of: %s)", t.Name, strings.Join(sortUnique(all), ", "))
	}
	n := keyNode(keys, e.Key, &ch.Self)
	f := field + "." + e.Key
	if v := nodes[e.Key]; v != nil && e.Item > 0 && e.Item <= len(v.Content) {
		n, f = v.Content[e.Item-1], fmt.Sprintf("%s[%d]", f, e.Item-1)
	}
	return config.NodeError(file, n, f, "%s", e.Msg)
}

func keyNode(keys map[string]*yaml.Node, key string, def *yaml.Node) *yaml.Node {
	for k, n := range keys {
		if checktype.Normalize(k) == key || k == key {
			return n
		}
	}
	return def
}

// paramField turns one key of the entry into a registry field: a scalar, a list of scalars, or
// (for a header option) a mapping of scalars.
func paramField(t *checktype.Type, k, v *yaml.Node) (checktype.Field, error) {
	f := checktype.Field{Key: k.Value, Line: k.Line}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag != "!!null" {
			f.Values = []string{v.Value}
		}
		return f, nil
	case yaml.SequenceNode:
		f.List = true
		for _, c := range v.Content {
			c = resolve(c)
			if c.Kind != yaml.ScalarNode {
				return f, errors.New("expected a list of plain values")
			}
			f.Values = append(f.Values, c.Value)
		}
		return f, nil
	case yaml.MappingNode:
		if o, _ := t.Option(k.Value); o != nil && o.Kind == checktype.Header {
			f.List = true
			for i := 0; i+1 < len(v.Content); i += 2 {
				name, val := resolve(v.Content[i]), resolve(v.Content[i+1])
				if name.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode {
					return f, errors.New("expected a mapping of plain values")
				}
				f.Values = append(f.Values, name.Value+": "+val.Value)
			}
			return f, nil
		}
	}
	return f, errors.New("expected a value or a list of values")
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < 16 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func has(fields []checktype.Field, t *checktype.Type, option string) bool {
	for _, f := range fields {
		if o, _ := t.Option(f.Key); o != nil && o.Name == option {
			return true
		}
	}
	return false
}

func defaultOf(t *checktype.Type, option string) string {
	o, _ := t.Option(option)
	return o.Default
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

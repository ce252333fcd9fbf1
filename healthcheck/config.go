package healthcheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vitalsproject/vitals/health/checktype"
)

// ParseConfig parses a YAML config:
//
//	checks:
//	  - http: http://127.0.0.1:8080/health
//	    status: 200-399
//	    timeout: 5s
//	  - port: nova-conductor
//	    ports: [5671, 5672]
//	  - socket: libvirtd
//	    path: /var/run/libvirt/libvirt-sock
//	  - file: /var/lib/svc/heartbeat
//	    max_age: 60s
//	  - exec: [/usr/bin/nova-manage, db, version]
//	  - [listen, haproxy, "8080"]   # the command-line words of one check
//
// In the mapping form the first key naming a check type is the type; its value holds the
// positional arguments (one, or a list); every other key is an option of that type, spelled as
// in vitals serve's YAML (the command-line flag with '_' for '-': max_age is --max-age). Errors
// name the line.
func ParseConfig(data []byte, env Env) ([]Check, error) {
	root, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	if root.kind == scalarNode && root.null {
		return nil, errors.New("empty config (expected a mapping with checks)")
	}
	if root.kind != mapNode {
		return nil, fmt.Errorf("line %d: expected a mapping with checks", root.line)
	}
	var list *node
	for i := 0; i+1 < len(root.items); i += 2 {
		k, v := root.items[i], root.items[i+1]
		if k.value != "checks" {
			// The key is not echoed: a file given by mistake (a token "user:secret") must not be.
			return nil, fmt.Errorf("line %d: unknown top-level field (expected checks)", k.line)
		}
		list = v
	}
	if list == nil {
		return nil, fmt.Errorf("line %d: no checks", root.line)
	}
	if list.kind != listNode || len(list.items) == 0 {
		return nil, fmt.Errorf("line %d: checks: expected a list of checks", list.line)
	}
	var out []Check
	for _, item := range list.items {
		c, err := parseItem(item, env)
		if errors.Is(err, ErrHelp) {
			err = errors.New("help is not a check")
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", item.line, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// parseItem parses one list item: the words of a command line, or a mapping.
func parseItem(item *node, env Env) (Check, error) {
	switch item.kind {
	case listNode:
		words, err := scalars(item)
		if err != nil {
			return Check{}, err
		}
		if len(words) == 0 {
			return Check{}, errors.New("empty check")
		}
		return parseForm(words, env)
	case mapNode:
	default:
		return Check{}, errors.New("expected a check: a mapping such as {http: URL} or a list of words")
	}
	// The type is the first key naming one.
	kind := -1
	for i := 0; i+1 < len(item.items) && kind < 0; i += 2 {
		if Registry().Lookup(item.items[i].value) != nil {
			kind = i
		}
	}
	if kind < 0 {
		return Check{}, fmt.Errorf("no check kind (expected a key naming one of: %s)", strings.Join(Registry().Names(), ", "))
	}
	t := Registry().Lookup(item.items[kind].value)
	args, err := scalars(item.items[kind+1])
	if err != nil {
		return Check{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	in := checktype.Input{Args: args, ArgsLine: item.items[kind].line, Defaults: checktype.ConfigDefaults()}
	words := append([]string{t.Name}, args...)
	for i := 0; i+1 < len(item.items); i += 2 {
		k, v := item.items[i], item.items[i+1]
		if i == kind {
			continue
		}
		if kt := Registry().Lookup(k.value); kt != nil {
			if o, _ := t.Option(k.value); o == nil {
				return Check{}, fmt.Errorf("line %d: two kinds in one check: %s and %s", k.line, t.Name, kt.Name)
			}
		}
		f, err := field(t, k, v)
		if err != nil {
			return Check{}, err
		}
		in.Fields = append(in.Fields, f)
		for _, val := range f.Values {
			words = append(words, checktype.Flag(f.Key), val)
		}
	}
	return build(t, in, words, env, func(k string) string { return k })
}

// field turns a key and its value into a registry field: a scalar, a list of scalars, or (for
// headers) a mapping of scalars.
func field(t *checktype.Type, k, v *node) (checktype.Field, error) {
	f := checktype.Field{Key: k.value, Line: k.line}
	o, _ := t.Option(k.value)
	switch {
	case v.kind == mapNode && o != nil && o.Kind == checktype.Header:
		f.List = true
		for i := 0; i+1 < len(v.items); i += 2 {
			name, val := v.items[i], v.items[i+1]
			if val.kind != scalarNode {
				return f, fmt.Errorf("%s: line %d: expected a plain value", k.value, val.line)
			}
			f.Values = append(f.Values, name.value+": "+val.value)
		}
		return f, nil
	case v.kind == listNode:
		f.List = true
	}
	vals, err := scalars(v)
	if err != nil {
		return f, fmt.Errorf("%s: %w", k.value, err)
	}
	f.Values = vals
	return f, nil
}

// scalars returns a scalar as one word, a list of scalars as words, null as none.
func scalars(n *node) ([]string, error) {
	switch n.kind {
	case scalarNode:
		if n.null {
			return nil, nil
		}
		return []string{n.value}, nil
	case listNode:
		out := make([]string, 0, len(n.items))
		for _, c := range n.items {
			if c.kind != scalarNode {
				return nil, fmt.Errorf("line %d: expected a plain value", c.line)
			}
			out = append(out, c.value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: expected a value or a list of values", n.line)
}

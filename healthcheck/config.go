package healthcheck

import (
	"errors"
	"fmt"
	"strings"
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
//	  - [listen, haproxy, "8080"]   # the command-line words of one check
//
// In the mapping form the check's kind is the one key naming a form (its value is the first
// argument, or a list of arguments); "ports" and "path" are further arguments; every other key is
// a flag of that form (max_age is --max-age; true turns a boolean flag on). Errors name the line.
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
			return nil, fmt.Errorf("line %d: unknown field %q (expected checks)", k.line, k.value)
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
		args, err := itemArgs(item)
		if err != nil {
			return nil, err
		}
		c, err := parseForm(args, env)
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

// itemArgs turns one list item into command-line words.
func itemArgs(item *node) ([]string, error) {
	switch item.kind {
	case listNode:
		words, err := scalars(item)
		if err != nil {
			return nil, err
		}
		if len(words) == 0 {
			return nil, fmt.Errorf("line %d: empty check", item.line)
		}
		return words, nil
	case mapNode:
	default:
		return nil, fmt.Errorf("line %d: expected a check: a mapping such as {http: URL} or a list of words", item.line)
	}
	var kind string
	var pos, flags []string
	for i := 0; i+1 < len(item.items); i += 2 {
		k, v := item.items[i], item.items[i+1]
		key := k.value
		vals, err := scalars(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		switch {
		case forms[key].parse != nil:
			if kind != "" {
				return nil, fmt.Errorf("line %d: two kinds in one check: %s and %s", k.line, kind, key)
			}
			kind = key
			pos = append(vals, pos...)
		case key == "ports" || key == "path":
			pos = append(pos, vals...)
		default:
			name := "--" + strings.ReplaceAll(key, "_", "-")
			for _, v := range vals {
				switch strings.ToLower(v) {
				case "true":
					flags = append(flags, name)
				case "false":
				default:
					flags = append(flags, name, v)
				}
			}
		}
	}
	if kind == "" {
		return nil, fmt.Errorf("line %d: no check kind (expected one of http, vitals, port, listen, socket, process, file, tcp, capability, memory)", item.line)
	}
	return append(append([]string{kind}, pos...), flags...), nil
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

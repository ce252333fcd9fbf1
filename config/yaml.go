package config

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// Port is a TCP or UDP port number: 1-65535 in YAML.
type Port int

// Limits that keep hostile documents (alias bombs, deep nesting) from exhausting the loader.
const (
	maxNodes = 100000
	maxDepth = 64
)

var (
	durationType = reflect.TypeOf(time.Duration(0))
	portType     = reflect.TypeOf(Port(0))
	nodeType     = reflect.TypeOf(yaml.Node{})
)

// LoadYAML reads the YAML file at path (a regular file of at most bounded.ConfigSize, read within
// bounded.Timeout) and decodes it strictly into out, a pointer to a struct. See DecodeYAML for the rules.
func LoadYAML(path string, out any) error {
	data, err := bounded.ReadFile(context.Background(), path, bounded.ConfigSize)
	if err != nil {
		return &Error{File: path, Msg: fmt.Sprintf("read config: %v", err), Err: err}
	}
	return DecodeYAML(path, data, out)
}

// DecodeYAML decodes the first YAML document in data into out (a pointer to a struct), strictly:
//   - struct fields are matched by their `yaml:"name"` tag (or lower-cased field name); a key that
//     matches no field is an error listing the expected keys, unless the struct has a yaml.Node
//     field tagged `yaml:",remain"`, which then receives the other keys as a mapping;
//   - fields tagged `config:"required"` must be present;
//   - time.Duration fields take Go durations ("10s", "1m30s"); Port fields take 1-65535;
//   - yaml.Node fields receive the raw node, to be decoded later with DecodeNode; a yaml.Node field
//     tagged `yaml:",node"` receives the struct's own mapping node (to locate keys later with
//     KeyNode when validating).
//
// Every problem found is reported, as Errors, each with the file, line and dotted field path
// (e.g. "checks[2].interval"). file names the input in errors.
func DecodeYAML(file string, data []byte, out any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return syntaxError(file, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &Error{File: file, Msg: "empty document: expected a YAML mapping"}
	}
	return DecodeNode(file, "", doc.Content[0], out)
}

// DecodeNode decodes one YAML node into out (a pointer) with the rules of DecodeYAML. path is the
// dotted field path of node, used as a prefix in errors ("" for the document root).
func DecodeNode(file, path string, node *yaml.Node, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("config.DecodeNode: out must be a non-nil pointer")
	}
	d := &decoder{file: file}
	d.decode(path, node, v.Elem(), 0)
	if len(d.errs) > 0 {
		return d.errs
	}
	return nil
}

// syntaxError turns a yaml.v3 parse error ("yaml: line 3: mapping values are not allowed ...")
// into an *Error with the line number.
func syntaxError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.Index(rest, ":"); i > 0 {
			if n, convErr := strconv.Atoi(rest[:i]); convErr == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

type decoder struct {
	file    string
	errs    Errors
	nodes   int
	stopped bool // too many nodes or errors: decode nothing more
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	const maxErrors = 50
	if len(d.errs) > maxErrors {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	if len(d.errs) == maxErrors {
		d.errs = append(d.errs, &Error{File: d.file, Line: line, Msg: "too many errors; stopping"})
		d.stopped = true
		return
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) decode(path string, n *yaml.Node, v reflect.Value, depth int) {
	if d.stopped {
		return
	}
	d.nodes++
	if d.nodes > maxNodes || depth > maxDepth {
		d.fail(n, path, "document too large or too deeply nested (more than %d nodes or %d levels, aliases expanded)", maxNodes, maxDepth)
		d.stopped = true
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.fail(n, path, "unknown alias")
			return
		}
		n = n.Alias
	}
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if isNull(n) {
		// An explicit null leaves the zero value (and pointers nil), unless a struct with required
		// fields is expected.
		if v.Kind() == reflect.Struct {
			fields, _ := structFields(v.Type())
			for _, f := range fields {
				if f.required {
					d.fail(n, path, "expected a mapping, got null")
					break
				}
			}
		}
		return
	}
	switch {
	case v.Type() == durationType:
		d.duration(path, n, v)
		return
	case v.Type() == portType:
		d.port(path, n, v)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(path, n, v.Elem(), depth+1)
	case reflect.Struct:
		d.structure(path, n, v, depth)
	case reflect.Slice:
		d.slice(path, n, v, depth)
	case reflect.Map:
		d.mapping(path, n, v, depth)
	case reflect.String:
		if s, ok := d.scalar(path, n, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.scalar(path, n, "true or false")
		if !ok {
			return
		}
		switch n.Tag {
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				v.SetBool(b)
				return
			}
		}
		d.fail(n, path, "expected true or false, got %s", notShown(s))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, ok := d.scalar(path, n, "an integer")
		if !ok {
			return
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, v.Type().Bits())
		if err != nil || n.Tag == "!!str" {
			d.fail(n, path, "expected an integer, got %s", notShown(s))
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, ok := d.scalar(path, n, "a non-negative integer")
		if !ok {
			return
		}
		u, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 0, v.Type().Bits())
		if err != nil || n.Tag == "!!str" {
			d.fail(n, path, "expected a non-negative integer, got %s", notShown(s))
			return
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		s, ok := d.scalar(path, n, "a number")
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil || n.Tag == "!!str" || math.IsNaN(f) {
			d.fail(n, path, "expected a number, got %s", notShown(s))
			return
		}
		v.SetFloat(f)
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.fail(n, path, "cannot decode: %v", err)
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		panic(fmt.Sprintf("config: unsupported field type %s at %s", v.Type(), path))
	}
}

// resolve follows an alias.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return notShown(n.Value)
	}
	return "nothing"
}

// notShown describes a value without quoting it: a configuration error names the position (file, line,
// column) and what was expected, never the value, which may be a secret in the wrong file or field.
func notShown(v string) string { return fmt.Sprintf("a value of %d bytes (not shown)", len(v)) }

func (d *decoder) scalar(path string, n *yaml.Node, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "expected %s, got %s", want, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) duration(path string, n *yaml.Node, v reflect.Value) {
	const want = `a duration with a unit, such as "10s", "500ms" or "1m30s"`
	s, ok := d.scalar(path, n, want)
	if !ok {
		return
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.fail(n, path, "expected %s, got %s", want, notShown(s))
		return
	}
	if dur < 0 {
		d.fail(n, path, "expected a positive duration, got %s", notShown(s))
		return
	}
	v.SetInt(int64(dur))
}

func (d *decoder) port(path string, n *yaml.Node, v reflect.Value) {
	s, ok := d.scalar(path, n, "a port number (1-65535)")
	if !ok {
		return
	}
	p, err := ParsePort(s)
	if err != nil || n.Tag == "!!str" {
		d.fail(n, path, "expected a port number (1-65535), got %s", notShown(s))
		return
	}
	v.SetInt(int64(p))
}

// ParsePort parses a port number in 1-65535.
func ParsePort(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("expected a port number (1-65535), got %s", notShown(s))
	}
	return p, nil
}

func (d *decoder) slice(path string, n *yaml.Node, v reflect.Value, depth int) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "expected a list, got %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(fmt.Sprintf("%s[%d]", path, i), item, s.Index(i), depth+1)
	}
	v.Set(s)
}

func (d *decoder) mapping(path string, n *yaml.Node, v reflect.Value, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		panic(fmt.Sprintf("config: map keys must be strings at %s", path))
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, ok := d.scalar(path, k, "a string key")
		if !ok {
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(join(path, key), val, elem, depth+1)
		m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
	}
	v.Set(m)
}

type fieldInfo struct {
	name     string
	index    int
	required bool
}

func structFields(t reflect.Type) (fields []fieldInfo, remain int) {
	fields, remain, _ = structFieldsNode(t)
	return fields, remain
}

func structFieldsNode(t reflect.Type) (fields []fieldInfo, remain, self int) {
	remain, self = -1, -1
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts == "remain" && f.Type == nodeType {
			remain = i
			continue
		}
		if opts == "node" && f.Type == nodeType {
			self = i
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields = append(fields, fieldInfo{name: name, index: i, required: f.Tag.Get("config") == "required"})
	}
	return fields, remain, self
}

// StructKeys lists the YAML keys a struct type accepts, sorted (for "expected one of" messages).
func StructKeys(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fields, _ := structFields(t)
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.name
	}
	sort.Strings(keys)
	return keys
}

func (d *decoder) structure(path string, n *yaml.Node, v reflect.Value, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	fields, remainIdx, selfIdx := structFieldsNode(v.Type())
	if selfIdx >= 0 {
		v.Field(selfIdx).Set(reflect.ValueOf(*n))
	}
	byName := make(map[string]fieldInfo, len(fields))
	for _, f := range fields {
		byName[f.name] = f
	}
	seen := make(map[string]bool, len(fields))
	var remain *yaml.Node
	if remainIdx >= 0 {
		remain = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, ok := d.scalar(path, k, "a string key")
		if !ok {
			continue
		}
		if k.Tag == "!!merge" {
			d.fail(k, path, "merge keys (<<) are not supported")
			continue
		}
		f, known := byName[key]
		if !known {
			if remain != nil {
				remain.Content = append(remain.Content, k, val)
				continue
			}
			d.fail(k, join(path, key), "unknown field (expected one of: %s)", strings.Join(sortedNames(fields), ", "))
			continue
		}
		if seen[key] {
			d.fail(k, join(path, key), "field given twice")
			continue
		}
		seen[key] = true
		if f.required && isNull(resolve(val)) {
			d.fail(val, join(path, key), "expected a value, got null")
			continue
		}
		d.decode(join(path, key), val, v.Field(f.index), depth+1)
	}
	for _, f := range fields {
		if f.required && !seen[f.name] {
			d.fail(n, join(path, f.name), "missing required field")
		}
	}
	if remain != nil {
		v.Field(remainIdx).Set(reflect.ValueOf(*remain))
	}
}

func sortedNames(fields []fieldInfo) []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	sort.Strings(names)
	return names
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// KeyNode returns the key node of key in mapping n (its Line locates the key), or nil.
func KeyNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// ValueNode returns the value node of key in mapping n, or nil.
func ValueNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// NodeError builds an *Error located at node n (file, line) for the given field path.
func NodeError(file string, n *yaml.Node, field, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Flatten turns an error made of *Error and Errors (possibly joined) into one Errors list; other
// errors are kept as an *Error without location.
func Flatten(err error) Errors {
	if err == nil {
		return nil
	}
	var out Errors
	switch e := err.(type) {
	case Errors:
		return append(out, e...)
	case *Error:
		return Errors{e}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, inner := range j.Unwrap() {
			out = append(out, Flatten(inner)...)
		}
		return out
	}
	var ce *Error
	if errors.As(err, &ce) {
		return Errors{ce}
	}
	return Errors{{Msg: err.Error()}}
}

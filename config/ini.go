package config

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// INI is an oslo.config-style INI file (kuryr.conf, neutron.conf): [section] headers, "key = value"
// or "key: value" lines, "#" and ";" comment lines, indented continuation lines, repeated keys for
// multi-valued options, and a [DEFAULT] section whose keys every section inherits. Keys are matched
// with "-" and "_" treated alike, as oslo.config does.
//
// The typed getters (Section.Int, Section.Bool, ...) return the default when a key is absent and
// record an *Error with the file, line and "section.key" field when a value is malformed; Err
// returns everything recorded, so a loader reads all its options and reports all problems at once:
//
//	f, err := config.LoadINI("/etc/kuryr/kuryr.conf")
//	if err != nil { return err }
//	s := f.Section("cni_health_server")
//	port := s.Port("port", 8090)
//	maxMem := s.Int("max_memory_usage", -1)
//	if err := f.Err(); err != nil { return err }
type INI struct {
	file     string
	sections map[string]*Section
	order    []string
	errs     Errors
}

// Section is one [section] of an INI file. A section absent from the file is empty (but still
// inherits [DEFAULT]); its getters return their defaults.
type Section struct {
	ini  *INI
	name string
	line int
	keys map[string][]iniValue
}

type iniValue struct {
	value string
	line  int
}

// DefaultSection is the section every other section inherits keys from.
const DefaultSection = "DEFAULT"

// LoadINI reads and parses the INI file at path: a regular file of at most bounded.ConfigSize, read
// within bounded.Timeout. Syntax errors are returned as Errors.
func LoadINI(path string) (*INI, error) {
	data, err := bounded.ReadFile(context.Background(), path, bounded.ConfigSize)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("read config: %v", err), Err: err}
	}
	return ParseINI(path, data)
}

// ParseINI parses INI data; file names it in errors.
func ParseINI(file string, data []byte) (*INI, error) {
	f := &INI{file: file, sections: map[string]*Section{}}
	var cur *Section
	var lastKey string // key that an indented continuation line extends
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	var errs Errors
	lineNo := 0
	for sc.Scan() {
		lineNo++
		raw := sc.Text()
		if lineNo == 1 {
			raw = strings.TrimPrefix(raw, "\ufeff")
		}
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" {
			lastKey = ""
			continue
		}
		if trimmed[0] == '#' || trimmed[0] == ';' {
			continue
		}
		if (raw[0] == ' ' || raw[0] == '\t') && lastKey != "" && cur != nil {
			vals := cur.keys[lastKey]
			last := &vals[len(vals)-1]
			if last.value == "" {
				last.value = trimmed
			} else {
				last.value += "\n" + trimmed
			}
			continue
		}
		lastKey = ""
		if trimmed[0] == '[' {
			if !strings.HasSuffix(trimmed, "]") || len(trimmed) < 3 {
				errs = append(errs, &Error{File: file, Line: lineNo, Msg: fmt.Sprintf("invalid section header (%s): expected \"[name]\"", notShown(trimmed))})
				cur = nil
				continue
			}
			name := strings.TrimSpace(trimmed[1 : len(trimmed)-1])
			if s, ok := f.sections[name]; ok {
				cur = s // oslo merges repeated sections
				continue
			}
			cur = &Section{ini: f, name: name, line: lineNo, keys: map[string][]iniValue{}}
			f.sections[name] = cur
			f.order = append(f.order, name)
			continue
		}
		i := strings.IndexAny(trimmed, "=:")
		if i <= 0 {
			errs = append(errs, &Error{File: file, Line: lineNo, Msg: fmt.Sprintf("invalid line (%s): expected \"key = value\" or \"[section]\"", notShown(trimmed))})
			continue
		}
		if cur == nil {
			errs = append(errs, &Error{File: file, Line: lineNo, Msg: "option before any [section] header"})
			continue
		}
		key := normKey(trimmed[:i])
		val := unquote(strings.TrimSpace(trimmed[i+1:]))
		cur.keys[key] = append(cur.keys[key], iniValue{value: val, line: lineNo})
		lastKey = key
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, &Error{File: file, Line: lineNo + 1, Msg: fmt.Sprintf("read: %v", err)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return f, nil
}

func normKey(k string) string {
	return strings.ReplaceAll(strings.TrimSpace(k), "-", "_")
}

// unquote strips one pair of matching surrounding quotes, as oslo.config does.
func unquote(v string) string {
	if len(v) >= 2 && v[0] == v[len(v)-1] && (v[0] == '"' || v[0] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}

// File returns the path the INI was read from.
func (f *INI) File() string { return f.file }

// Sections lists the sections in file order (DEFAULT included when present).
func (f *INI) Sections() []string { return append([]string(nil), f.order...) }

// HasSection reports whether the file has the section.
func (f *INI) HasSection(name string) bool { _, ok := f.sections[name]; return ok }

// Section returns the named section; never nil.
func (f *INI) Section(name string) *Section {
	if s, ok := f.sections[name]; ok {
		return s
	}
	return &Section{ini: f, name: name, keys: map[string][]iniValue{}}
}

// Err returns the errors recorded by the getters so far (as Errors), or nil.
func (f *INI) Err() error {
	if len(f.errs) == 0 {
		return nil
	}
	return append(Errors(nil), f.errs...)
}

// Name returns the section name.
func (s *Section) Name() string { return s.name }

// lookup finds the last value of key, in this section then in [DEFAULT].
func (s *Section) lookup(key string) (iniValue, bool) {
	key = normKey(key)
	if vs := s.keys[key]; len(vs) > 0 {
		return vs[len(vs)-1], true
	}
	if s.name != DefaultSection {
		if d, ok := s.ini.sections[DefaultSection]; ok {
			if vs := d.keys[key]; len(vs) > 0 {
				return vs[len(vs)-1], true
			}
		}
	}
	return iniValue{}, false
}

// Has reports whether key is set (here or in [DEFAULT]).
func (s *Section) Has(key string) bool { _, ok := s.lookup(key); return ok }

// HeaderLine returns the line of the section's header, 0 when the file has no such section.
func (s *Section) HeaderLine() int { return s.line }

// Line returns the line where key is set, 0 when absent.
func (s *Section) Line(key string) int { v, _ := s.lookup(key); return v.line }

// Keys lists the keys set in this section (not those inherited from [DEFAULT]), sorted.
func (s *Section) Keys() []string {
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Errorf records an error about key (located at its line) and returns it, for checks the getters
// do not cover (e.g. "must be less than interval").
func (s *Section) Errorf(key, format string, args ...any) *Error {
	v, _ := s.lookup(key)
	e := &Error{File: s.ini.file, Line: v.line, Field: s.name + "." + normKey(key), Msg: fmt.Sprintf(format, args...)}
	s.ini.errs = append(s.ini.errs, e)
	return e
}

// CheckKnown records an error for every key of this section that is not in known (catching typos
// such as "prot = 8090"). Keys inherited from [DEFAULT] are not checked.
func (s *Section) CheckKnown(known ...string) {
	for _, k := range s.Unknown(known...) {
		s.Errorf(k, "unknown option (expected one of: %s)", strings.Join(known, ", "))
	}
}

// Unknown returns the keys of this section that are not in known, sorted: for a section the reader
// shares with another program (Kuryr's [kubernetes]), whose other options it ignores rather than
// refuses. Keys inherited from [DEFAULT] are not included.
func (s *Section) Unknown(known ...string) []string {
	ok := make(map[string]bool, len(known))
	for _, k := range known {
		ok[normKey(k)] = true
	}
	var unknown []string
	for _, k := range s.Keys() {
		if !ok[k] {
			unknown = append(unknown, k)
		}
	}
	return unknown
}

// String returns the value of key, or def when absent.
func (s *Section) String(key, def string) string {
	if v, ok := s.lookup(key); ok {
		return v.value
	}
	return def
}

// Strings returns every value of a repeated (multi-valued) key, in file order; def when absent.
func (s *Section) Strings(key string, def []string) []string {
	key = normKey(key)
	vs := s.keys[key]
	if len(vs) == 0 && s.name != DefaultSection {
		if d, ok := s.ini.sections[DefaultSection]; ok {
			vs = d.keys[key]
		}
	}
	if len(vs) == 0 {
		return def
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.value
	}
	return out
}

// Int returns key as an integer, or def when absent or malformed (recording an error).
func (s *Section) Int(key string, def int) int {
	v, ok := s.lookup(key)
	if !ok || v.value == "" {
		return def
	}
	i, err := strconv.Atoi(v.value)
	if err != nil {
		s.Errorf(key, "expected an integer, got %s", notShown(v.value))
		return def
	}
	return i
}

// IntRange is Int limited to [min, max].
func (s *Section) IntRange(key string, def, min, max int) int {
	v, ok := s.lookup(key)
	if !ok || v.value == "" {
		return def
	}
	i, err := strconv.Atoi(v.value)
	if err != nil || i < min || i > max {
		s.Errorf(key, "expected an integer from %d to %d, got %s", min, max, notShown(v.value))
		return def
	}
	return i
}

// Port is IntRange(key, def, 1, 65535).
func (s *Section) Port(key string, def int) int {
	v, ok := s.lookup(key)
	if !ok || v.value == "" {
		return def
	}
	p, err := ParsePort(v.value)
	if err != nil {
		s.Errorf(key, "expected a port number (1-65535), got %s", notShown(v.value))
		return def
	}
	return p
}

// Bool returns key as a boolean (true/false, yes/no, on/off, 1/0, any case, as oslo.config), or def.
func (s *Section) Bool(key string, def bool) bool {
	v, ok := s.lookup(key)
	if !ok || v.value == "" {
		return def
	}
	switch strings.ToLower(v.value) {
	case "true", "yes", "on", "1":
		return true
	case "false", "no", "off", "0":
		return false
	}
	s.Errorf(key, "expected a boolean (true or false), got %s", notShown(v.value))
	return def
}

// Seconds returns key as a duration given in seconds, as oslo.config options are ("30", "0.5"), or
// def. A Go duration with a unit ("30s", "2m") is accepted too. Negative values are errors.
func (s *Section) Seconds(key string, def time.Duration) time.Duration {
	v, ok := s.lookup(key)
	if !ok || v.value == "" {
		return def
	}
	if f, err := strconv.ParseFloat(v.value, 64); err == nil && f >= 0 && f < 1e9 {
		return time.Duration(f * float64(time.Second))
	}
	if d, err := time.ParseDuration(v.value); err == nil && d >= 0 {
		return d
	}
	s.Errorf(key, "expected a number of seconds (such as \"30\") or a duration (such as \"30s\"), got %s", notShown(v.value))
	return def
}

// List returns key as a comma-separated list (items trimmed, empty items dropped), or def.
func (s *Section) List(key string, def []string) []string {
	v, ok := s.lookup(key)
	if !ok {
		return def
	}
	var out []string
	for _, item := range strings.FieldsFunc(v.value, func(r rune) bool { return r == ',' || r == '\n' }) {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

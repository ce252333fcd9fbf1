package checktype

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// Input is one check as a frontend read it.
type Input struct {
	// Args are the positional words; ArgsLine is where they were written (0 when unknown).
	Args     []string
	ArgsLine int
	// Fields are the named options, in the order given.
	Fields []Field
	// Timeout is the caller's timeout of one run (vitals serve's timeout field, the healthcheck's
	// HEALTHCHECK_CURL_MAX_TIME); a timeout field wins over it; 0 means the type's default.
	Timeout time.Duration
	// Defaults are the caller's defaults of options (name -> value as text, valid for the kind),
	// which a field given wins over and which win over the type's: a config file's stricter
	// defaults than the command line's TripleO-compatible ones (port's established). A name the
	// type lacks is ignored.
	Defaults map[string]string
}

// Field is one named option as written.
type Field struct {
	// Key as written: "ca_file", "--ca-file", "cacert".
	Key string
	// Values: one for a scalar, several for a list or a repeated flag, none for a bare switch.
	Values []string
	// List is set when the values were written as a list (a YAML sequence or mapping).
	List bool
	// Line where the field was written (0 when unknown).
	Line int
}

// Error is a problem with one option (Key) or with the check as a whole (Key "").
type Error struct {
	Key  string // the option's name (or the alias as written)
	Line int
	Msg  string
	// Missing: a required option was not given. Unknown: the key names no option. Arg: the
	// value was a positional word.
	Missing, Unknown, Arg bool
	// Item is the 1-based position of the failing value in a list field; 0 when none.
	Item int
}

func (e *Error) Error() string {
	if e.Key == "" {
		return e.Msg
	}
	return e.Key + ": " + e.Msg
}

// Errors are every problem found in one check.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Warning is a deprecated spelling that still works.
type Warning struct {
	// Alias as the user wrote it (normalized), and the option to use instead.
	Alias, Option string
	// Value is set for a switch alias: --rss means --source rss.
	Value string
	Line  int
}

// ConfigDefaults are the defaults of a config file (the healthcheck's YAML, vitals serve's),
// stricter than the command line's, which keeps TripleO's meaning: a half-closed connection is
// no connection.
func ConfigDefaults() map[string]string { return map[string]string{"established": "true"} }

// Check is a built check: its body and the timeout of one run.
type Check struct {
	Run     checks.Func
	Timeout time.Duration
	// SelfTimed: Run enforces Timeout itself (see Type.SelfTimed).
	SelfTimed bool
}

// Values are an Input resolved against a Type: every value has been checked against its option's
// kind, so the getters cannot fail.
type Values struct {
	t        *Type
	vals     map[string][]string
	set      map[string]bool
	defaults map[string]string
	timeout  time.Duration
}

// Build resolves the input against the type and builds the check. Errors are returned as Errors
// (every problem found); warnings name the deprecated spellings used.
func (t *Type) Build(in Input) (Check, []Warning, error) {
	v, warns, errs := t.Resolve(in)
	if len(errs) > 0 {
		return Check{}, warns, errs
	}
	run, err := t.New(v)
	if err != nil {
		return Check{}, warns, Errors{{Line: in.ArgsLine, Msg: err.Error()}}
	}
	return Check{Run: run, Timeout: v.Timeout(), SelfTimed: t.SelfTimed}, warns, nil
}

// Resolve fills the options from the input and checks every value.
func (t *Type) Resolve(in Input) (*Values, []Warning, Errors) {
	v := &Values{t: t, vals: map[string][]string{}, set: map[string]bool{}, defaults: in.Defaults}
	var errs Errors
	var warns []Warning
	add := func(o *Option, key string, vals []string, line int, arg, list bool) {
		v.set[o.Name] = true // even when invalid: one error is enough
		for i, s := range vals {
			err := check(o.Kind, s)
			if err == nil && o.Validate != nil {
				err = o.Validate(s)
			}
			if err != nil {
				e := &Error{Key: key, Line: line, Msg: err.Error(), Arg: arg}
				if list {
					e.Item = i + 1
				}
				errs = append(errs, e)
				return
			}
		}
		if o.Kind.List() {
			v.vals[o.Name] = append(v.vals[o.Name], vals...)
		} else if len(vals) > 0 {
			v.vals[o.Name] = vals[len(vals)-1:] // the last one given wins
		}
	}

	// Positional words.
	i := 0
	for _, name := range t.Args {
		if i >= len(in.Args) {
			break
		}
		o, _ := t.Option(name)
		if o.Kind.List() {
			add(o, o.Name, in.Args[i:], in.ArgsLine, true, false)
			i = len(in.Args)
			break
		}
		add(o, o.Name, in.Args[i:i+1], in.ArgsLine, true, false)
		i++
	}
	if i < len(in.Args) {
		errs = append(errs, &Error{Line: in.ArgsLine, Arg: true, Msg: fmt.Sprintf("unexpected argument %q (expected %s)", in.Args[i], t.Usage())})
	}

	// Named fields.
	for _, f := range in.Fields {
		key := Normalize(f.Key)
		o, a := t.Option(key)
		if o == nil {
			errs = append(errs, &Error{Key: key, Line: f.Line, Unknown: true,
				Msg: fmt.Sprintf("unknown option for a check of type %q (expected one of: %s)", t.Name, strings.Join(t.OptionNames(), ", "))})
			continue
		}
		vals := f.Values
		if a != nil {
			if a.Deprecated {
				warns = append(warns, Warning{Alias: a.Name, Option: o.Name, Value: a.Value, Line: f.Line})
			}
			if a.Value != "" {
				b := true
				if len(vals) > 0 {
					var err error
					if b, err = strconv.ParseBool(vals[len(vals)-1]); err != nil {
						errs = append(errs, &Error{Key: key, Line: f.Line, Msg: fmt.Sprintf("%q is not a boolean", vals[len(vals)-1])})
						continue
					}
				}
				if !b {
					continue
				}
				vals = []string{a.Value}
			}
		}
		if f.List && !o.Kind.List() {
			errs = append(errs, &Error{Key: key, Line: f.Line, Msg: "expected a single value, got a list"})
			continue
		}
		if len(vals) == 0 {
			if o.Kind != Bool {
				if f.List || o.Kind.List() {
					v.set[o.Name] = true // an empty list
					continue
				}
				errs = append(errs, &Error{Key: key, Line: f.Line, Msg: "needs a value"})
				continue
			}
			vals = []string{"true"}
		}
		if o.Name == timeoutOption.Name {
			d, err := ParseDuration(vals[len(vals)-1])
			if err != nil {
				errs = append(errs, &Error{Key: key, Line: f.Line, Msg: err.Error()})
				continue
			}
			v.timeout = d
			continue
		}
		add(o, key, vals, f.Line, false, f.List)
	}

	for _, o := range t.Options {
		if o.Required && !v.set[o.Name] {
			errs = append(errs, &Error{Key: o.Name, Line: in.ArgsLine, Missing: true, Msg: "missing required option"})
		}
	}
	if v.timeout == 0 {
		v.timeout = in.Timeout
	}
	if v.timeout == 0 {
		v.timeout = t.DefaultTimeoutOf()
	}
	return v, warns, errs
}

// check validates one value of a kind.
func check(k Kind, s string) error {
	var err error
	switch k {
	case Bool:
		if _, e := strconv.ParseBool(s); e != nil {
			err = fmt.Errorf("%q is not a boolean", s)
		}
	case Int:
		if _, e := strconv.ParseInt(s, 10, 64); e != nil {
			err = fmt.Errorf("%q: expected a whole number", s)
		}
	case Duration:
		_, err = ParseDuration(s)
	case Ports:
		_, err = parsePorts(s)
	case Header:
		_, _, err = parseHeader(s)
	}
	return err
}

// ParseDuration accepts Go durations ("10s", "1m30s") and bare seconds ("10", "0.5"), as
// TripleO's scripts pass them; it must be positive.
func ParseDuration(s string) (time.Duration, error) {
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

func parsePorts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") { // "5671,5672" as TripleO's scripts write it
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("expected a port number (1-65535), got %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseHeader(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return "", "", fmt.Errorf("%q: expected 'Name: value'", s)
	}
	return http.CanonicalHeaderKey(strings.TrimSpace(k)), strings.TrimSpace(v), nil
}

// Set reports whether the option was given.
func (v *Values) Set(name string) bool { return v.set[name] }

// Timeout is the timeout of one run.
func (v *Values) Timeout() time.Duration { return v.timeout }

// raw returns the option's values, or its default.
func (v *Values) raw(name string) []string {
	if vals, ok := v.vals[name]; ok || v.set[name] {
		return vals
	}
	o, _ := v.t.Option(name)
	if o == nil {
		panic("checktype: type " + v.t.Name + " has no option " + name)
	}
	if d, ok := v.defaults[o.Name]; ok {
		return []string{d}
	}
	if o.Default == "" {
		return nil
	}
	if o.Kind.List() {
		return strings.Split(o.Default, ",")
	}
	return []string{o.Default}
}

func (v *Values) last(name string) string {
	vals := v.raw(name)
	if len(vals) == 0 {
		return ""
	}
	return vals[len(vals)-1]
}

// String returns a text option.
func (v *Values) String(name string) string { return v.last(name) }

// Bool returns a boolean option.
func (v *Values) Bool(name string) bool { b, _ := strconv.ParseBool(v.last(name)); return b }

// Int returns a whole-number option.
func (v *Values) Int(name string) int64 { n, _ := strconv.ParseInt(v.last(name), 10, 64); return n }

// Duration returns a duration option (0 when unset without default).
func (v *Values) Duration(name string) time.Duration {
	s := v.last(name)
	if s == "" {
		return 0
	}
	d, _ := ParseDuration(s)
	return d
}

// Strings returns a list option.
func (v *Values) Strings(name string) []string { return v.raw(name) }

// Ports returns a port-list option.
func (v *Values) Ports(name string) []int {
	var out []int
	for _, s := range v.raw(name) {
		p, _ := parsePorts(s)
		out = append(out, p...)
	}
	return out
}

// Header returns a header option (nil when empty).
func (v *Values) Header(name string) http.Header {
	var h http.Header
	for _, s := range v.raw(name) {
		k, val, _ := parseHeader(s)
		if h == nil {
			h = http.Header{}
		}
		h[k] = append(h[k], val)
	}
	return h
}

package checktype

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// Kind is how an option's text is read.
type Kind uint8

const (
	// String is one text value.
	String Kind = iota
	// Bool is true or false; on the command line a flag without a value is true.
	Bool
	// Int is a whole number.
	Int
	// Duration is a Go duration ("500ms", "10s", "1m") or a bare number of seconds ("10", "0.5").
	Duration
	// Strings is a list of text values; every occurrence adds to it.
	Strings
	// Ports is a list of port numbers 1-65535; "5671,5672" is two.
	Ports
	// Header is a list of "Name: value" HTTP headers (in YAML a mapping works too).
	Header
)

// List reports whether the kind holds several values.
func (k Kind) List() bool { return k == Strings || k == Ports || k == Header }

// Option is one option of a check type.
type Option struct {
	// Name is the one spelling, snake_case: "ca_file" in YAML, --ca-file on the command line.
	Name string
	// Kind says how the text is read.
	Kind Kind
	// Default, as text; "" means none (the zero value).
	Default string
	// Required options must be given (positionally or by name).
	Required bool
	// Validate, when set, checks each value beyond its kind.
	Validate func(string) error
	// Arg names the value in usage text ("URL", "PORT"); default the upper-case name.
	Arg string
	// Doc is one line of user documentation.
	Doc string
	// Aliases are other spellings that still work.
	Aliases []Alias
}

// Alias is another spelling of an option.
type Alias struct {
	// Name as written (snake_case, or one letter for a short flag such as -k).
	Name string
	// Value, when set, makes the alias a switch that sets the option to this value (or adds it,
	// for a list): --rss is --source rss.
	Value string
	// Deprecated aliases produce a Warning naming the option to use instead.
	Deprecated bool
}

// Type is one check type.
type Type struct {
	// Name of the type: "http", "port".
	Name string
	// Doc is one line: when the check passes.
	Doc string
	// Args are the options filled, in order, by positional words (command line, and the value of
	// the type's key in the healthcheck YAML). A list option takes every remaining word.
	Args []string
	// Rest: flags are read only before the first positional word; every word from there on,
	// dashes included, is positional (a command and its arguments).
	Rest bool
	// Options of the type (the timeout, common to every type, is not listed).
	Options []Option
	// Timeout is the default timeout of one run when the caller gives none.
	Timeout time.Duration
	// SelfTimed: the check enforces the timeout itself (New passes it to the constructor) and
	// reports it ("timeout after 5s"); a caller need not add a deadline of its own.
	SelfTimed bool
	// InProcess types measure the process that runs them (its goroutines): meaningful in a
	// long-running server, not in the healthcheck binary, which does not offer them.
	InProcess bool
	// New makes the check body from the resolved values; it may return an error the
	// constructor found (an invalid combination, an unreadable file).
	New func(v *Values) (checks.Func, error)
}

// DefaultTimeout is the timeout of a run when neither the caller nor the type says otherwise.
const DefaultTimeout = 10 * time.Second

// timeoutOption is the option every type has: the timeout of one run. Callers with their own
// timeout field (vitals serve) pass it in Input.Timeout instead.
var timeoutOption = Option{Name: "timeout", Kind: Duration, Doc: "timeout of one run"}

// Option returns the option named name (either spelling, or an alias) and the alias used, if any.
func (t *Type) Option(name string) (*Option, *Alias) {
	name = Normalize(name)
	if name == timeoutOption.Name {
		o := timeoutOption // a copy: the declaration stays as it is
		return &o, nil
	}
	for i := range t.Options {
		o := &t.Options[i]
		if o.Name == name {
			return o, nil
		}
	}
	for i := range t.Options {
		o := &t.Options[i]
		for j := range o.Aliases {
			if o.Aliases[j].Name == name {
				return o, &o.Aliases[j]
			}
		}
	}
	return nil, nil
}

// TakesValue reports whether the flag --name takes a value (false for booleans and switch
// aliases) and whether the type knows it.
func (t *Type) TakesValue(name string) (takes, known bool) {
	o, a := t.Option(name)
	if o == nil {
		return false, false
	}
	if a != nil && a.Value != "" {
		return false, true
	}
	return o.Kind != Bool, true
}

// OptionNames lists the names of the options, timeout included, sorted.
func (t *Type) OptionNames() []string {
	names := []string{timeoutOption.Name}
	for _, o := range t.Options {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	return names
}

// DefaultTimeoutOf returns the type's default timeout.
func (t *Type) DefaultTimeoutOf() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return DefaultTimeout
}

// Usage is the positional part of the command-line form: "PROCESS PORT...".
func (t *Type) Usage() string {
	parts := make([]string, len(t.Args))
	optional := true // an argument is optional when it and every later one are
	for i := len(t.Args) - 1; i >= 0; i-- {
		o, _ := t.Option(t.Args[i])
		a := o.ArgName()
		if o.Kind.List() {
			a += "..."
		}
		optional = optional && !o.Required
		if optional {
			a = "[" + a + "]"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// IsArg reports whether the option can be given as a positional word.
func (t *Type) IsArg(name string) bool { return slices.Contains(t.Args, name) }

// ArgName is the name of the option's value in usage text.
func (o *Option) ArgName() string {
	if o.Arg != "" {
		return o.Arg
	}
	return strings.ToUpper(o.Name)
}

// Flag is the command-line spelling of a name: "--ca-file", or "-k" for one letter.
func Flag(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + strings.ReplaceAll(name, "_", "-")
}

// Normalize turns a flag or key as written ("--ca-file", "ca-file", "ca_file") into the option's
// spelling ("ca_file").
func Normalize(s string) string {
	return strings.ReplaceAll(strings.TrimLeft(s, "-"), "-", "_")
}

// Registry holds check types by name.
type Registry struct {
	types map[string]*Type
	names []string
}

// NewRegistry returns a registry of the types. A name declared twice is an error.
func NewRegistry(types ...Type) (*Registry, error) {
	r := &Registry{types: make(map[string]*Type, len(types))}
	if err := r.Add(types...); err != nil {
		return nil, err
	}
	return r, nil
}

// Add declares more types (those of a package with its own clients).
func (r *Registry) Add(types ...Type) error {
	for i := range types {
		t := &types[i]
		if _, dup := r.types[t.Name]; dup || t.Name == "" {
			return fmt.Errorf("check type %q declared twice or unnamed", t.Name)
		}
		if t.New == nil {
			return fmt.Errorf("check type %q has no New", t.Name)
		}
		for _, a := range t.Args {
			if o, _ := t.Option(a); o == nil {
				return fmt.Errorf("check type %q: argument %q is not an option", t.Name, a)
			}
		}
		r.types[t.Name] = t
		r.names = append(r.names, t.Name)
	}
	slices.Sort(r.names)
	return nil
}

// Lookup returns the type named name, or nil.
func (r *Registry) Lookup(name string) *Type { return r.types[name] }

// Names lists the type names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// Without returns a registry without the in-process types (for the healthcheck binary).
func (r *Registry) Without(drop func(*Type) bool) *Registry {
	out := &Registry{types: map[string]*Type{}}
	for _, n := range r.names {
		if t := r.types[n]; !drop(t) {
			out.types[n] = t
			out.names = append(out.names, n)
		}
	}
	return out
}

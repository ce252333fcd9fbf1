package healthcheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/health/checktype"
)

// Check is one parsed check, ready to run.
type Check struct {
	// Kind is the check type's name: http, vitals, port, listen, socket, process, file, tcp,
	// exec, capability or memory.
	Kind string
	// Args are the words the check was parsed from (for debug output).
	Args []string
	// Run is the check.
	Run checks.Func
	// Timeout bounds one run (0 when Run enforces its own).
	Timeout time.Duration
	// Warnings name deprecated spellings the check was written with.
	Warnings []string
}

// Env reads an environment variable (os.Getenv in the command; a map in tests).
type Env func(string) string

// ErrHelp is returned by ParseArgs for -h/--help.
var ErrHelp = errors.New("help requested")

// DefaultVitalsURL is what `healthcheck vitals` asks when given no URL.
const DefaultVitalsURL = checktype.DefaultVitalsURL

// Registry returns the check types this command offers: those of the registry, without the ones
// that measure the checking process itself.
var Registry = sync.OnceValue(func() *checktype.Registry {
	r, err := checktype.NewRegistry(checktype.Builtin()...)
	if err != nil {
		panic(err) // the built-in declarations are fixed; a test covers them
	}
	return r.Without(func(t *checktype.Type) bool { return t.InProcess })
})

// Usage is the text printed for --help.
func Usage() string {
	var b strings.Builder
	b.WriteString(`usage: healthcheck CHECK [-- CHECK]...      all checks must pass
       healthcheck --config FILE              checks from a YAML file
       healthcheck                            no arguments (e.g. run as /openstack/healthcheck):
                                              checks from $HEALTHCHECK_CONFIG, else ` + DefaultConfigPath + `
checks (every one also takes --timeout DURATION; durations are 10s, 500ms or bare seconds):
`)
	reg := Registry()
	for _, name := range reg.Names() {
		t := reg.Lookup(name)
		fmt.Fprintf(&b, "  %s %s\n      %s\n", name, t.Usage(), strings.ReplaceAll(t.Doc, "`", ""))
		var flags []string
		for _, o := range t.Options {
			if t.IsArg(o.Name) {
				continue
			}
			f := checktype.Flag(o.Name)
			if o.Kind != checktype.Bool {
				f += " " + o.ArgName()
			}
			flags = append(flags, "["+f+"]")
		}
		if len(flags) > 0 {
			fmt.Fprintf(&b, "      %s\n", strings.Join(flags, " "))
		}
	}
	b.WriteString(`environment: HEALTHCHECK_CURL_MAX_TIME (seconds, default timeout of http/vitals),
  HEALTHCHECK_USE_PROXY=1 (proxies for http), HEALTHCHECK_DEBUG=1 (details on stderr)
`)
	return b.String()
}

func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

// truthy reads an on/off environment variable.
func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on", "y":
		return true
	}
	return false
}

// ParseArgs parses checks from the command line (without the program name): one or more forms
// separated by "--".
func ParseArgs(args []string, env Env) ([]Check, error) {
	if len(args) == 0 {
		return nil, errors.New("no check given (try: healthcheck --help)")
	}
	var out []Check
	start := 0
	for i := 0; i <= len(args); i++ {
		if i < len(args) && args[i] != "--" {
			continue
		}
		group := args[start:i]
		start = i + 1
		if len(group) == 0 {
			return nil, errors.New("empty check between separators")
		}
		c, err := parseForm(group, env)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// lookup returns the type named kind, or an error listing the known ones.
func lookup(kind string) (*checktype.Type, error) {
	if t := Registry().Lookup(kind); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("unknown check %q (expected one of: %s)", kind, strings.Join(Registry().Names(), ", "))
}

// parseForm parses one form: the type, then its words (positionals and flags: "--name value",
// "--name=value"; a single dash works too). With Rest types, flags end at the first positional.
func parseForm(args []string, env Env) (Check, error) {
	kind := args[0]
	if kind == "-h" || kind == "--help" || kind == "help" {
		return Check{}, ErrHelp
	}
	t, err := lookup(kind)
	if err != nil {
		return Check{}, err
	}
	var in checktype.Input
	words := args[1:]
	for i := 0; i < len(words); i++ {
		a := words[i]
		if (t.Rest && len(in.Args) > 0) || len(a) < 2 || a[0] != '-' || isNumber(a) {
			in.Args = append(in.Args, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			return Check{}, ErrHelp
		}
		takes, known := t.TakesValue(name)
		if !known {
			return Check{}, fmt.Errorf("%s: unknown flag %s (expected one of: %s)", kind, a, flagList(t))
		}
		f := checktype.Field{Key: name}
		switch {
		case hasVal:
			f.Values = []string{val}
		case takes:
			if i+1 >= len(words) {
				return Check{}, fmt.Errorf("%s: flag --%s needs a value", kind, name)
			}
			i++
			f.Values = []string{words[i]}
		}
		in.Fields = append(in.Fields, f)
	}
	return build(t, in, args, env, checktype.Flag)
}

func flagList(t *checktype.Type) string {
	names := t.OptionNames()
	for i, n := range names {
		names[i] = checktype.Flag(n)
	}
	return strings.Join(names, ", ")
}

// build resolves the input with the command's environment and builds the check; key words an
// option's name in errors (a flag, or a YAML key).
func build(t *checktype.Type, in checktype.Input, words []string, env Env, key func(string) string) (Check, error) {
	if t.Name == "http" || t.Name == "vitals" {
		// TripleO's healthcheck_curl reads its default timeout, in seconds, from here.
		if v := strings.TrimSpace(env("HEALTHCHECK_CURL_MAX_TIME")); v != "" {
			d, err := checktype.ParseDuration(v)
			if err != nil {
				return Check{}, fmt.Errorf("HEALTHCHECK_CURL_MAX_TIME: %w", err)
			}
			in.Timeout = d
		}
	}
	if o, _ := t.Option("proxy"); o != nil && truthy(env("HEALTHCHECK_USE_PROXY")) {
		in.Fields = append([]checktype.Field{{Key: "proxy"}}, in.Fields...) // a later --proxy=false wins
	}
	c, warns, err := t.Build(in)
	if err != nil {
		return Check{}, fmt.Errorf("%s: %s", t.Name, describe(t, err, key))
	}
	out := Check{Kind: t.Name, Args: words, Run: c.Run}
	if !c.SelfTimed {
		out.Timeout = c.Timeout
	}
	for _, w := range warns {
		use := key(w.Option)
		if w.Value != "" {
			use += " " + w.Value
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s is deprecated; use %s", key(w.Alias), use))
	}
	return out, nil
}

// describe words the registry's errors for this command.
func describe(t *checktype.Type, err error, key func(string) string) string {
	var es checktype.Errors
	if !errors.As(err, &es) {
		return err.Error()
	}
	var msgs []string
	missingArgs := false
	for _, e := range es {
		switch {
		case e.Missing && t.IsArg(e.Key):
			if !missingArgs {
				msgs = append(msgs, "expected "+t.Usage())
			}
			missingArgs = true
		case e.Unknown:
			msgs = append(msgs, fmt.Sprintf("unknown option %s (expected one of: %s)", key(e.Key), strings.Join(t.OptionNames(), ", ")))
		case e.Key == "" || e.Arg:
			msgs = append(msgs, e.Msg)
		default:
			msgs = append(msgs, key(e.Key)+": "+e.Msg)
		}
	}
	return strings.Join(msgs, "; ")
}

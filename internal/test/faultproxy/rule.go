package faultproxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Rule selects requests and says which fault each one gets. The first rule (in the order added) that matches
// a request decides; a request no rule matches is forwarded unchanged.
type Rule struct {
	// Name identifies the rule for Remove, Count and the log. Required and unique within a proxy.
	Name string
	// Method matches the HTTP method ("" = any).
	Method string
	// Path matches the URL path with path.Match syntax ("*" within one segment: "/v2.0/routers/*"); a pattern
	// ending in "/**" matches every path below its prefix ("/v2.0/**"). "" = any path.
	Path string
	// Query: every key must be present in the query; a non-empty value must also equal it
	// ({"marker": ""} = every page after the first).
	Query map[string]string
	// Body, when set, must occur in the request body (its first MaxBodyMatch bytes), e.g. `"type": "HARD"`
	// to tell Nova's hard reboots from soft ones. The body is read once and passed on unchanged.
	Body string

	// Fault is injected into every matching request (at most Times times when Times > 0; after that the
	// rule lets requests pass).
	Fault Fault
	Times int
	// Sequence, when set, replaces Fault: the n-th matching request gets Sequence[n]; requests after the end
	// of the sequence pass. Sequence{Status(500,...), Status(500,...)} = fail twice, then pass.
	Sequence []Fault
}

// FailTimes is the scripted "fail n times, then pass" rule.
func FailTimes(name, method, pathPattern string, n int, f Fault) Rule {
	seq := make([]Fault, n)
	for i := range seq {
		seq[i] = f
	}
	return Rule{Name: name, Method: method, Path: pathPattern, Sequence: seq}
}

func (r Rule) validate() error {
	if r.Name == "" {
		return errors.New("rule without a name")
	}
	if r.Path != "" {
		if _, err := path.Match(strings.TrimSuffix(r.Path, "/**"), "/"); err != nil {
			return fmt.Errorf("rule %s: path pattern %q: %w", r.Name, r.Path, err)
		}
	}
	if r.Times < 0 {
		return fmt.Errorf("rule %s: negative Times %d", r.Name, r.Times)
	}
	if len(r.Sequence) == 0 {
		if r.Fault.Kind == "" {
			return fmt.Errorf("rule %s: neither Fault nor Sequence set", r.Name)
		}
		if err := r.Fault.validate(); err != nil {
			return fmt.Errorf("rule %s: %w", r.Name, err)
		}
	}
	for i, f := range r.Sequence {
		if err := f.validate(); err != nil {
			return fmt.Errorf("rule %s: sequence step %d: %w", r.Name, i, err)
		}
	}
	return nil
}

// MaxBodyMatch is how much of a request body a Body rule looks at.
const MaxBodyMatch = 1 << 20

func (r Rule) matches(req *http.Request, body []byte) bool {
	if r.Body != "" && !bytes.Contains(body, []byte(r.Body)) {
		return false
	}
	if r.Method != "" && !strings.EqualFold(r.Method, req.Method) {
		return false
	}
	if r.Path != "" && !matchPath(r.Path, req.URL.Path) {
		return false
	}
	if len(r.Query) > 0 {
		q := req.URL.Query()
		for k, want := range r.Query {
			if !q.Has(k) || (want != "" && q.Get(k) != want) {
				return false
			}
		}
	}
	return true
}

func matchPath(pattern, p string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	ok, _ := path.Match(pattern, p) // validated when added
	return ok
}

// ruleState is a rule plus how many requests it matched.
type ruleState struct {
	Rule
	matched int
}

// next returns the fault for the next matching request and advances the rule.
func (s *ruleState) next() Fault {
	n := s.matched
	s.matched++
	if len(s.Sequence) > 0 {
		if n < len(s.Sequence) {
			return s.Sequence[n]
		}
		return Pass()
	}
	if s.Times > 0 && n >= s.Times {
		return Pass()
	}
	return s.Fault
}

// queryString renders a query for events and logs.
func queryString(u *url.URL) string { return u.RawQuery }

package healthcheck

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/vitalsproject/vitals/health/checks"
)

// DefaultVitalsURL is what `healthcheck vitals` asks when given no URL: the readiness endpoint of
// a Vitals health server (vitals serve, the operator, the agent) on its conventional local port,
// verbose so that the failing checks can be named.
const DefaultVitalsURL = "http://127.0.0.1:8080/readyz?verbose"

// parseVitals builds the vitals check: GET the URL, 200 is healthy; otherwise the failing checks
// are named from the "[-]name failed: ..." lines of the Kubernetes-style text body.
func parseVitals(pos []string, flags map[string][]string, env Env) (checks.Func, error) {
	if err := nArgs(pos, 0, 1, "an optional URL"); err != nil {
		return nil, err
	}
	opts := checks.HTTPOptions{URL: DefaultVitalsURL, Insecure: boolFlag(flags, "insecure"), Judge: judgeVitals,
		Header: http.Header{"Accept": {"text/plain"}}}
	if len(pos) == 1 {
		opts.URL = pos[0]
		if !strings.Contains(opts.URL, "://") {
			opts.URL = "http://" + opts.URL
		}
	}
	var err error
	if opts.Timeout, err = httpTimeout(env); err != nil {
		return nil, err
	}
	if opts.Timeout, err = durationFlag(flags, "timeout", opts.Timeout); err != nil {
		return nil, err
	}
	opts.CAFile, _ = last(flags, "cacert")
	return checks.HTTP(opts)
}

func judgeVitals(status int, body []byte) error {
	if status == http.StatusOK {
		return nil
	}
	if failing := failingChecks(body); len(failing) > 0 {
		return fmt.Errorf("status %d, failing: %s", status, strings.Join(failing, ", "))
	}
	return fmt.Errorf("status %d", status)
}

// failingChecks names the failing checks in a Kubernetes-style verbose body: the
// "[-]name failed: ..." lines. (The check asks for text, which every Vitals server and the
// Kubernetes apiserver serve; a JSON body yields the status alone.)
func failingChecks(body []byte) []string {
	var names []string
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "[-]"); ok {
			name, _, _ := strings.Cut(rest, " ")
			names = append(names, name)
		}
	}
	return names
}

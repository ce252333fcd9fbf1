package checktype

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// DefaultVitalsURL is what a vitals check asks when given no URL: the readiness endpoint of a
// Vitals health server (vitals serve, the operator, the agent) on its conventional local port,
// verbose so that the failing checks can be named.
const DefaultVitalsURL = "http://127.0.0.1:8080/readyz?verbose"

// vitalsType declares the vitals check type.
func vitalsType() Type {
	return Type{
		Name: "vitals", Args: []string{"url"}, Timeout: 10 * time.Second, SelfTimed: true,
		Doc: "a Vitals health server answers 200; otherwise the failing checks are named from its `[-]name failed` lines",
		Options: []Option{
			{Name: "url", Default: DefaultVitalsURL, Doc: "the endpoint to ask"},
			insecure, caFile,
		},
		New: newVitals,
	}
}

func newVitals(v *Values) (checks.Func, error) {
	return checks.HTTP(checks.HTTPOptions{URL: withScheme(v.String("url")), Insecure: v.Bool("insecure"), CAFile: v.String("ca_file"),
		Timeout: v.Timeout(), Judge: judgeVitals, Header: http.Header{"Accept": {"text/plain"}}})
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

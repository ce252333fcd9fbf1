package oslo

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// osloApp runs oslo.middleware's healthcheck application (testdata/oslo_healthcheck.py) on
// 127.0.0.1 with backends whose states it reads from a file at each request.
type osloApp struct {
	url   string
	state string
}

func startOslo(t *testing.T, py string, backends int, detailed bool, disable string) *osloApp {
	t.Helper()
	a := &osloApp{state: filepath.Join(t.TempDir(), "state.json")}
	a.set(t, make([]osloResult, backends))
	det := "0"
	if detailed {
		det = "1"
	}
	args := []string{"testdata/oslo_healthcheck.py", a.state, det}
	if disable != "" {
		args = append(args, disable)
	}
	cmd := exec.Command(py, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	var port int
	if _, serr := fmt.Sscanf(line, "port %d", &port); err != nil || serr != nil {
		t.Fatalf("oslo app did not start: %q %v %v", line, err, serr)
	}
	a.url = fmt.Sprintf("http://127.0.0.1:%d%s", port, Path)
	return a
}

// set writes the backends' states.
func (a *osloApp) set(t *testing.T, rs []osloResult) {
	t.Helper()
	type st struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason"`
		Details   string `json:"details"`
	}
	states := make([]st, len(rs))
	for i, r := range rs {
		states[i] = st{r.available, r.reason, r.details}
	}
	b, _ := json.Marshal(states)
	if err := os.WriteFile(a.state, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

type osloResponse struct {
	status      int
	contentType string
	body        string
}

func osloDo(t *testing.T, method, url, accept string) osloResponse {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return osloResponse{res.StatusCode, res.Header.Get("Content-Type"), string(body)}
}

var osloNowRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?$`)

// comparable reduces a detailed response to what both implementations share: the JSON's
// "detailed" and "reasons" (and the form of "now"), the HTML's table of results.
func comparable(t *testing.T, r osloResponse, detailed bool) osloResponse {
	t.Helper()
	if !detailed || r.body == "" {
		return r
	}
	switch {
	case strings.HasPrefix(r.contentType, "application/json"):
		var m map[string]any
		if err := json.Unmarshal([]byte(r.body), &m); err != nil {
			t.Fatalf("detailed JSON: %v\n%s", err, r.body)
		}
		if now, _ := m["now"].(string); !osloNowRE.MatchString(now) {
			t.Errorf("detailed JSON: now %q", now)
		}
		if p, _ := m["platform"].(string); p == "" {
			t.Errorf("detailed JSON: no platform")
		}
		b, _ := json.Marshal(map[string]any{"detailed": m["detailed"], "reasons": m["reasons"]})
		r.body = string(b)
	case strings.HasPrefix(r.contentType, "text/html"):
		i, j := strings.Index(r.body, "<H2>Result of"), strings.Index(r.body, "</TABLE>")
		if i < 0 || j < i || !strings.Contains(r.body, "<B>Current time:</B><PRE>") {
			t.Fatalf("detailed HTML:\n%s", r.body)
		}
		r.body = r.body[i:j]
	}
	return r
}

var osloAccepts = []string{
	"", "text/plain", "text/html", "application/json", "*/*", "text/*", "application/*",
	"text/*;q=0.5, application/json;q=0.5", "application/xml", "text/html;q=0.1, application/json;q=0.2",
	"application/json;q=0", "text/plain;q=0, text/html;q=0.3", "TEXT/HTML", "text/html;level=1",
	"application/json;q=0.9;ext=1, text/html;q=0.8", "image/png, */*;q=0.1", "garbage", "text/html;q=2",
}

// TestOsloCompatibility answers the same requests as oslo.middleware's healthcheck for the same
// backends' states (Debian's python3-oslo.middleware, run on 127.0.0.1): status, Content-Type and
// body for GET, POST and HEAD, each Accept type, plain and detailed, with and without its
// disable_by_file backend.
func TestOsloCompatibility(t *testing.T) {
	py := testenv.OsloPython(t)
	errDown := errors.New("connection refused")
	errOdd := errors.New(`<tls> handshake "failed" & ünïcode ✓ 𝄞`)
	states := []struct {
		name      string
		db, cache error
		disableOn bool
	}{
		{"all ok", nil, nil, false},
		{"cache fails", nil, errDown, false},
		{"both fail, odd characters", errOdd, errDown, false},
		{"disabled by file", nil, nil, true},
		{"disabled by file and failing", errDown, nil, true},
	}
	for _, detailed := range []bool{false, true} {
		for _, gate := range []bool{false, true} {
			t.Run(fmt.Sprintf("detailed=%v,disable_by_file=%v", detailed, gate), func(t *testing.T) {
				disable := ""
				if gate {
					disable = filepath.Join(t.TempDir(), "disabled")
				}
				m, clk := newTest(t)
				db, cache := component(t, m, "db"), component(t, m, "cache")
				ours := httptest.NewServer(Handler(m, Options{Probes: health.HandlerOptions{Details: true, DisableByFilePath: disable},
					Detailed: detailed, Clock: clk}))
				defer ours.Close()
				theirs := startOslo(t, py, 2, detailed, disable)
				for _, st := range states {
					if st.disableOn && !gate {
						continue
					}
					set(db, st.db)
					set(cache, st.cache)
					if gate {
						if st.disableOn {
							if err := os.WriteFile(disable, nil, 0o600); err != nil {
								t.Fatal(err)
							}
						} else {
							_ = os.Remove(disable)
						}
						clk.Step(2 * time.Second) // past the gate's look at the files
					}
					// The same states for oslo's backends: what Vitals reports for each check.
					var rs []osloResult
					for _, c := range []struct {
						name string
						err  error
					}{{"db", st.db}, {"cache", st.cache}} {
						r := osloResult{available: c.err == nil, reason: "OK", details: "component " + c.name + ": ok"}
						if c.err != nil {
							r.reason = c.name + " failed: " + c.err.Error()
							r.details = "component " + c.name + ": failed: " + c.err.Error()
						}
						rs = append(rs, r)
					}
					theirs.set(t, rs)
					for _, method := range []string{"GET", "POST", "HEAD"} {
						for _, accept := range osloAccepts {
							a := comparable(t, osloDo(t, method, ours.URL+Path, accept), detailed)
							b := comparable(t, osloDo(t, method, theirs.url, accept), detailed)
							if !reflect.DeepEqual(a, b) {
								t.Errorf("%s: %s Accept %q:\nvitals:  %d %q\n%s\noslo:    %d %q\n%s", st.name, method, accept,
									a.status, a.contentType, a.body, b.status, b.contentType, b.body)
							}
						}
					}
				}
			})
		}
	}
	t.Run("no backends", func(t *testing.T) {
		m, _ := newTest(t)
		ours := httptest.NewServer(Handler(m, Options{}))
		defer ours.Close()
		theirs := startOslo(t, py, 0, false, "")
		for _, accept := range osloAccepts {
			if a, b := osloDo(t, "GET", ours.URL+Path, accept), osloDo(t, "GET", theirs.url, accept); a != b {
				t.Errorf("Accept %q:\nvitals: %+v\noslo:   %+v", accept, a, b)
			}
		}
	})
}

func newTest(t *testing.T) (*health.Manager, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	m := health.NewManager(health.WithClock(clk), health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(m.Stop)
	return m, clk
}

// component registers a readiness component: its state is set at once by Fail and Recover.
func component(t *testing.T, m *health.Manager, name string) *health.Component {
	t.Helper()
	c, err := m.Component(name, health.ComponentOptions{Probes: health.Readiness})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func set(c *health.Component, err error) {
	if err != nil {
		c.Fail(err)
		return
	}
	c.Recover()
}

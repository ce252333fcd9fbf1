package health

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Reasons given by a handler disabled by file, as oslo.middleware's healthcheck plugins say them.
const (
	ReasonDisabledByFile  = "DISABLED BY FILE"
	ReasonFilePathMissing = "FILE PATH MISSING"
)

// fileStatInterval is how long one look at the disable/enable files is trusted: probes are a hot
// path and a stat costs a system call.
const fileStatInterval = time.Second

// fileGate disables a handler by the presence (or absence) of files, as oslo.middleware's
// disable_by_file_path, disable_by_file_paths and enable_by_file_paths do.
type fileGate struct {
	clock   clock.PassiveClock
	disable []string // any of these present: disabled
	enable  string   // this one absent: disabled
	stat    func(string) error

	mu    sync.Mutex
	state atomic.Pointer[gateState]
}

type gateState struct {
	at     time.Time
	reason string // "" when enabled
	// path is the file that decided (the first disable file, when enabled by none), for details.
	path, enable string
}

// details says what decided, as oslo's disable_by_file backend does in its detailed mode.
func (st *gateState) details() string {
	if st.reason == ReasonDisabledByFile || (st.reason == "" && st.path != "" && st.path == st.enable) {
		return "Path '" + st.path + "' was found"
	}
	return "Path '" + st.path + "' was not found"
}

// newFileGate returns nil when no option asks for a file.
func newFileGate(clk clock.PassiveClock, o HandlerOptions) (*fileGate, []string) {
	g := &fileGate{clock: clk, stat: func(p string) error { _, err := os.Stat(p); return err }}
	var bad []string
	if o.DisableByFilePath != "" {
		g.disable = append(g.disable, o.DisableByFilePath)
	}
	for _, pp := range o.DisableByFilePaths {
		port, path, ok := parsePortPath(pp)
		if !ok {
			bad = append(bad, pp)
			continue
		}
		if port == o.Port {
			g.disable = append(g.disable, path)
		}
	}
	for _, pp := range o.EnableByFilePaths {
		port, path, ok := parsePortPath(pp)
		if !ok {
			bad = append(bad, pp)
			continue
		}
		if port == o.Port && g.enable == "" {
			g.enable = path
		}
	}
	if len(g.disable) == 0 && g.enable == "" {
		return nil, bad
	}
	return g, bad
}

// parsePortPath splits "port:path".
func parsePortPath(s string) (int, string, bool) {
	p, path, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || path == "" {
		return 0, "", false
	}
	port, err := strconv.Atoi(strings.TrimSpace(p))
	if err != nil || port < 0 || port > 65535 {
		return 0, "", false
	}
	return port, strings.TrimSpace(path), true
}

// reason returns why the handler is disabled at now, or "" when it is enabled.
func (g *fileGate) reason(now time.Time) string {
	if g == nil {
		return ""
	}
	return g.look(now).reason
}

// look returns the gate's state at now, looking at the files at most once per fileStatInterval.
func (g *fileGate) look(now time.Time) *gateState {
	if st := g.state.Load(); st != nil {
		if age := now.Sub(st.at); age >= 0 && age < fileStatInterval {
			return st
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.state.Load(); st != nil {
		if age := now.Sub(st.at); age >= 0 && age < fileStatInterval {
			return st
		}
	}
	st := &gateState{at: now, enable: g.enable}
	for _, p := range g.disable {
		if g.stat(p) == nil {
			st.reason, st.path = ReasonDisabledByFile, p
			break
		}
	}
	if st.reason == "" && g.enable != "" {
		st.path = g.enable
		if g.stat(g.enable) != nil {
			st.reason = ReasonFilePathMissing
		}
	} else if st.reason == "" && len(g.disable) > 0 {
		st.path = g.disable[0]
	}
	g.state.Store(st)
	return st
}

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

// FileGate disables a handler by the presence (or absence) of files, as oslo.middleware's
// disable_by_file_path, disable_by_file_paths and enable_by_file_paths do. The probe handler has one
// (HandlerOptions); the oslo.middleware application (package health/oslo) makes its own from the same
// options. Its methods are safe for concurrent use.
type FileGate struct {
	clock   clock.PassiveClock
	disable []string // any of these present: disabled
	enable  string   // this one absent: disabled
	stat    func(string) error

	mu    sync.Mutex
	state atomic.Pointer[GateState]
}

// GateState is what a FileGate saw at one look.
type GateState struct {
	at time.Time
	// Reason is why the gate is closed (ReasonDisabledByFile, ReasonFilePathMissing), "" when open.
	Reason string
	// Path is the file that decided (the first disable file, when none disabled), for Details.
	Path   string
	enable string
}

// Details says what decided, as oslo's disable_by_file backend does in its detailed mode.
func (st *GateState) Details() string {
	if st.Reason == ReasonDisabledByFile || (st.Reason == "" && st.Path != "" && st.Path == st.enable) {
		return "Path '" + st.Path + "' was found"
	}
	return "Path '" + st.Path + "' was not found"
}

// NewFileGate returns the gate of o's DisableByFilePath, DisableByFilePaths and EnableByFilePaths for
// o.Port, or nil when no option asks for a file; the second result lists the "port:path" values that do
// not parse (ignored).
func NewFileGate(clk clock.PassiveClock, o HandlerOptions) (*FileGate, []string) {
	g := &FileGate{clock: clk, stat: func(p string) error { _, err := os.Stat(p); return err }}
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
func (g *FileGate) reason(now time.Time) string {
	if g == nil {
		return ""
	}
	return g.State(now).Reason
}

// State returns the gate's state at now (the gate's clock's now when zero), looking at the files at
// most once per second.
func (g *FileGate) State(now time.Time) *GateState {
	if now.IsZero() {
		now = g.clock.Now()
	}
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
	st := &GateState{at: now, enable: g.enable}
	for _, p := range g.disable {
		if g.stat(p) == nil {
			st.Reason, st.Path = ReasonDisabledByFile, p
			break
		}
	}
	if st.Reason == "" && g.enable != "" {
		st.Path = g.enable
		if g.stat(g.enable) != nil {
			st.Reason = ReasonFilePathMissing
		}
	} else if st.Reason == "" && len(g.disable) > 0 {
		st.Path = g.disable[0]
	}
	g.state.Store(st)
	return st
}

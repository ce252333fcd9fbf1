package health

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

var quiet = slog.New(slog.DiscardHandler)

// startServer starts s in the background; the returned function stops it and returns Start's error.
func startServer(t *testing.T, s *Server) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	var once bool
	var err error
	stop = func() error {
		if !once {
			once = true
			cancel()
			err = <-errc
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// probe GETs path on addr over a new connection and returns the status and body.
func probe(t *testing.T, addr net.Addr, path string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	res, err := c.Get("http://" + addr.String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServerOptionDefaults(t *testing.T) {
	// limits are what the http.Server and the listener end up with.
	type limits struct {
		readHeader, read, write, idle time.Duration
		headerBytes, conns            int
	}
	tests := []struct {
		name string
		in   ServerOptions
		want limits
	}{
		{"defaults", ServerOptions{}, limits{DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultWriteTimeout,
			DefaultIdleTimeout, DefaultMaxHeaderBytes, DefaultMaxConnections}},
		{"given", ServerOptions{ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 3 * time.Second,
			IdleTimeout: 4 * time.Second, MaxHeaderBytes: 1000, MaxConnections: 7},
			limits{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 1000, 7}},
		{"off", ServerOptions{ReadHeaderTimeout: -1, ReadTimeout: -1, WriteTimeout: -1, IdleTimeout: -1, MaxHeaderBytes: -1,
			MaxConnections: -1}, limits{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Addr, tc.in.Logger = "127.0.0.1:0", quiet
			s, err := NewServer(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := limits{s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.WriteTimeout, s.srv.IdleTimeout,
				s.srv.MaxHeaderBytes, s.ln.cap.Max()}
			if got != tc.want {
				t.Fatalf("limits %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestServerListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = NewServer(ServerOptions{Name: "probes", Addr: ln.Addr().String(), Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "probes server: listen on "+ln.Addr().String()) {
		t.Fatalf("err = %v", err)
	}
}

func TestServerPaths(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(Check{Name: "db", Run: ok, Probes: AllProbes, Interval: time.Hour})
	entryOf(t, m, "db").record(clk.Now(), 0, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "test_total", Help: "A test counter."}))
	tests := []struct {
		name   string
		opts   ServerOptions
		path   string
		status int
		body   string
	}{
		{"probes", ServerOptions{Manager: m}, "/readyz", 200, "ok"},
		{"sub-path", ServerOptions{Manager: m}, "/livez/db", 200, "ok"},
		{"no metrics", ServerOptions{Manager: m}, "/metrics", 404, "404 page not found\n"},
		{"metrics", ServerOptions{Manager: m, Metrics: reg}, "/metrics", 200, "test_total 0"},
		{"metrics only", ServerOptions{Metrics: reg}, "/readyz", 404, "404 page not found\n"},
		{"no /healthcheck of its own", ServerOptions{Manager: m}, "/healthcheck", 404, "404 page not found\n"},
		{"a handler beside the probes, told the port", ServerOptions{Manager: m, Handlers: func(p HandlerOptions) map[string]http.Handler {
			return map[string]http.Handler{"/healthcheck": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprintf(w, "port set: %v", p.Port != 0)
			})}
		}}, "/healthcheck", 200, "port set: true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Addr, tc.opts.Logger = "127.0.0.1:0", quiet
			s, err := NewServer(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			stop := startServer(t, s)
			status, body := probe(t, s.Addr(), tc.path)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("GET %s: %d %q, want %d %q", tc.path, status, body, tc.status, tc.body)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestServerHandlersRefused: a handler on a probe's path or /metrics is refused, with the path.
func TestServerHandlersRefused(t *testing.T) {
	m, _ := newTest(t)
	for _, path := range []string{"/readyz", "/livez/db", "/metrics", "healthcheck"} {
		_, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", Manager: m, Logger: quiet, Handlers: func(HandlerOptions) map[string]http.Handler {
			return map[string]http.Handler{path: http.NotFoundHandler()}
		}})
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(path)) {
			t.Errorf("handler on %s: %v, want a refusal naming it", path, err)
		}
	}
}

// TestServerDrain: when the context ends, readiness fails at once, liveness passes through the drain
// delay, and then the server shuts down.
func TestServerDrain(t *testing.T) {
	m, clk := newTest(t, WithDrainDelay(time.Minute))
	m.MustRegister(Check{Name: "db", Run: ok, Probes: AllProbes, Interval: time.Hour})
	entryOf(t, m, "db").record(clk.Now(), 0, nil)
	s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", Manager: m, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	if status, _ := probe(t, s.Addr(), "/readyz"); status != 200 {
		t.Fatalf("readyz before the drain: %d", status)
	}
	cancel()
	eventually(t, m.Draining)
	for _, tc := range []struct {
		path   string
		status int
	}{{"/readyz", 500}, {"/ready", 500}, {"/livez", 200}, {"/alive", 200}} {
		if status, body := probe(t, s.Addr(), tc.path); status != tc.status {
			t.Errorf("%s during the drain: %d %q, want %d", tc.path, status, body, tc.status)
		}
	}
	select {
	case err := <-errc:
		t.Fatalf("stopped before the drain delay: %v", err)
	default:
	}
	eventually(t, clk.HasWaiters)
	clk.Step(time.Minute)
	if err := <-errc; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := net.Dial("tcp", s.Addr().String()); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// waitClosed reads from c until the server closes it (EOF or reset); a read that times out means
// the server kept the connection.
func waitClosed(c net.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if err == nil || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return err
}

// TestServerSlowClients: a client that trickles its headers (slowloris) is cut by the read header
// timeout, oversized headers are refused, and an idle keep-alive connection is closed.
func TestServerSlowClients(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(Check{Name: "db", Run: ok, Probes: AllProbes, Interval: time.Hour})
	entryOf(t, m, "db").record(clk.Now(), 0, nil)
	s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", Manager: m, Logger: quiet,
		ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond, MaxHeaderBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)

	t.Run("slowloris", func(t *testing.T) {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stop := make(chan struct{})
		sent := make(chan int, 1)
		go func() {
			n, _ := c.Write([]byte("GET /livez HTTP/1.1\r\nHost: x\r\n"))
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					sent <- n
					return
				case <-tick.C:
					k, err := c.Write([]byte("X-Slow: 1\r\n"))
					n += k
					if err != nil {
						sent <- n
						return
					}
				}
			}
		}()
		err = waitClosed(c)
		close(stop)
		n := <-sent
		if err != nil {
			t.Fatalf("slow-header client not cut: %v (sent %d bytes)", err, n)
		}
	})

	t.Run("oversized headers", func(t *testing.T) {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := "GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n"
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 431", res.StatusCode)
		}
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Close {
			t.Fatalf("status %d close %v", res.StatusCode, res.Close)
		}
		if err := waitClosed(c); err != nil {
			t.Fatalf("idle connection kept: %v", err)
		}
	})
}

// TestServerConnectionFlood opens 1,100 connections, half idle after one request and half that never
// send a byte, as issue 12's attacker did. The server holds no more than its cap, its own liveness
// (a goroutine count under 1,000, as the example configuration of vitals serve checks) keeps
// passing, a new probe still gets through, and the timeouts close every connection.
func TestServerConnectionFlood(t *testing.T) {
	const (
		flood    = 1100
		capacity = 64
		maxGo    = 1000
	)
	limit := rlimitFiles(t)
	if limit < 2*flood+200 {
		prereq.Missing(t, "RLIMIT_NOFILE %d is too low for %d connections", limit, flood)
	}
	m := NewManager(WithLogger(quiet))
	goroutines := func(context.Context) error {
		if n := runtime.NumGoroutine(); n > maxGo {
			return errors.New("too many goroutines")
		}
		return nil
	}
	m.MustRegister(Check{Name: "goroutines", Run: goroutines, Probes: Liveness, Interval: 20 * time.Millisecond, Timeout: 10 * time.Millisecond})
	m.Start(context.Background())
	defer m.Stop()
	s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", Manager: m, Logger: quiet, MaxConnections: capacity,
		ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)
	eventually(t, func() bool { r, _ := m.Result("goroutines"); return r.Status == StatusOK })

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range flood {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			// A keep-alive request, answered, then silence (the answer may be lost to eviction).
			_, _ = c.Write([]byte("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"))
		}
	}
	held := s.ln.open()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	t.Logf("after %d connections: server holds %d, %d goroutines, heap in use %+.1f MiB", flood, held,
		runtime.NumGoroutine(), float64(int64(during.HeapInuse)-int64(before.HeapInuse))/(1<<20))
	if held > capacity {
		t.Errorf("server holds %d connections, cap %d", held, capacity)
	}
	if n := runtime.NumGoroutine(); n > maxGo {
		t.Errorf("%d goroutines", n)
	}
	if status, body := probe(t, s.Addr(), "/livez?verbose"); status != 200 {
		t.Errorf("liveness during the flood: %d %q", status, body)
	}
	if r, _ := m.Result("goroutines"); r.Status != StatusOK {
		t.Errorf("goroutines check during the flood: %+v", r)
	}
	for i, c := range conns {
		if err := waitClosed(c); err != nil {
			t.Fatalf("connection %d not closed by the server: %v", i, err)
		}
	}
	eventually(t, func() bool { return s.ln.open() == 0 })
}

func rlimitFiles(t *testing.T) uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		prereq.Missing(t, "getrlimit: %v", err)
	}
	if r.Cur < r.Max && r.Cur < 8192 {
		r.Cur = min(r.Max, 8192)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err == nil {
			return r.Cur
		}
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	}
	return r.Cur
}

// TestServerProbeOutlastsKeepAliveChurn is issue 27's churn made deterministic: the kubelet's probe is
// accepted but its request is not read yet (the machine is busy), and meanwhile more clients than the
// cap connect, ask once, get their answer and keep their connections open. The probe must still be
// answered: the connections idle after an answer make room, not the probe, which has had none.
func TestServerProbeOutlastsKeepAliveChurn(t *testing.T) {
	const capacity = 8
	m, clk := newTest(t)
	m.MustRegister(Check{Name: "db", Run: ok, Probes: AllProbes, Interval: time.Hour})
	entryOf(t, m, "db").record(clk.Now(), 0, nil)
	s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", Manager: m, Logger: quiet, MaxConnections: capacity,
		ReadHeaderTimeout: time.Hour, IdleTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)
	addr := s.Addr().String()

	kubelet, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.Close()
	eventually(t, func() bool { return s.ln.open() == 1 })

	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for i := range 3 * capacity {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		flood = append(flood, c)
		if _, err := c.Write([]byte("GET /livez HTTP/1.1\r\nHost: flood\r\n\r\n")); err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		// answered and kept: the server sees it idle before the next one connects
		eventually(t, func() bool { return s.ln.cap.Idling() >= min(i+1, capacity-1) })
	}

	if _, err := kubelet.Write([]byte("GET /livez HTTP/1.1\r\nHost: kubelet\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatalf("probe: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(kubelet), nil)
	if err != nil {
		t.Fatalf("probe after %d keep-alive clients at a cap of %d: %v (the probe's connection was evicted)", 3*capacity, capacity, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("probe: status %d", res.StatusCode)
	}
}

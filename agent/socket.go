package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/cnireport"
	"github.com/vitalsproject/vitals/internal/base/conncap"
)

// MaxReportLine is the longest report line the socket server accepts.
const MaxReportLine = cnireport.MaxLine

// DefaultSocketMaxConnections caps the report socket's open connections. A CNI reporter holds one for the
// milliseconds its reports take, one per CNI operation, so even a node starting a hundred pods at once
// holds a few; each connection costs about 7 KiB (a goroutine and its buffers), so the cap bounds the
// socket to well under a MiB where 10,000 connections took the agent to 76 MB (docs/benchmarks.md).
const DefaultSocketMaxConnections = 64

// Beater is a heartbeat: a *health.Component satisfies it.
type Beater interface {
	Beat()
	Fail(err error)
	Recover()
}

// SocketServer accepts CNI results as JSON lines on a unix socket (one report per line, any number of
// lines per connection) and answers each line with a Response line.
//
// Whoever can write to the socket can spend the CNI ADD failure budget, so it is root's only: the file
// is 0600 (0660 lets its group in too), its directory must not be writable by others (who could put
// their own socket in its place), and each connection's peer (SO_PEERCRED) must be root, the agent's
// own user, or, at 0660, of the socket's group; other peers are disconnected unread.
type SocketServer struct {
	// Path of the socket; its directory is created (0755) if missing.
	Path string
	// Mode of the socket file: 0600 (default) or 0660.
	Mode os.FileMode
	// Reporter receives every valid report.
	Reporter Reporter
	// Heartbeat, when set, beats every BeatPeriod while the server accepts connections and its socket
	// file is in place, and fails when either is lost.
	Heartbeat  Beater
	BeatPeriod time.Duration
	// IdleTimeout closes a connection that sends nothing for this long; default 1 minute.
	IdleTimeout time.Duration
	// MaxConnections caps the open connections (0: DefaultSocketMaxConnections; negative: no cap). At the
	// cap a new connection evicts one that is waiting (idle after its reports were answered first, then
	// silent ones, oldest first: conncap.Cap); it is refused only while every connection has a report
	// being handled.
	MaxConnections int
	Log            *slog.Logger

	mu       sync.Mutex
	ln       *net.UnixListener
	cap      *conncap.Cap
	conns    map[net.Conn]struct{}
	inode    uint64
	gid      uint32
	mode     os.FileMode
	wg       sync.WaitGroup
	stopping bool
}

// Listen creates the socket (replacing a stale one) so that clients can connect once it returns.
func (s *SocketServer) Listen() error {
	mode := s.Mode
	if mode == 0 {
		mode = 0o600
	}
	ln, err := listenUnix("CNI report socket", s.Path, mode)
	if err != nil {
		return err
	}
	maxConns := s.MaxConnections
	if maxConns == 0 {
		maxConns = DefaultSocketMaxConnections
	}
	s.mu.Lock()
	s.ln = ln
	s.cap = conncap.New(max(maxConns, 0), func(n int) {
		s.log().Warn("CNI report socket at its connection cap: evicting waiting connections", "path", s.Path, "maxConnections", n)
	})
	s.mode = mode
	s.inode, s.gid = fileIDs(s.Path)
	s.conns = map[net.Conn]struct{}{}
	s.mu.Unlock()
	return nil
}

// listenUnix creates the unix socket what at path with mode (0600 or 0660), replacing a stale one. It
// refuses a directory writable by others (who could replace the socket with theirs) and a path in use
// by another process.
func listenUnix(what, path string, mode os.FileMode) (*net.UnixListener, error) {
	if path == "" {
		return nil, fmt.Errorf("listen on %s: no path", what)
	}
	if mode != 0o600 && mode != 0o660 {
		return nil, fmt.Errorf("listen on %s: mode %#o, expected 0600 or 0660", what, mode)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create directory of %s: %w", what, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("check directory of %s: %w", what, err)
	} else if fi.Mode().Perm()&0o002 != 0 {
		return nil, fmt.Errorf("listen on %s: directory %s is writable by others (mode %#o): anyone could replace the socket", what, dir, fi.Mode().Perm())
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen on %s: %s exists and is not a socket", what, path)
		}
		// A socket left by a previous run: nobody can be listening on it if dialing fails.
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: %s is in use by another process", what, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale %s: %w", what, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", what, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("set mode of %s: %w", what, err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != mode {
		ln.Close()
		return nil, fmt.Errorf("listen on %s: %s does not have mode %#o", what, path, mode)
	}
	return ln, nil
}

// Serve accepts connections until ctx is done, then closes the listener and every connection and
// waits for their goroutines. Listen must have been called.
func (s *SocketServer) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return errors.New("serve CNI report socket: Listen was not called")
	}
	log := s.log()
	stop := make(chan struct{})
	var beatWG sync.WaitGroup
	if s.Heartbeat != nil {
		beatWG.Add(1)
		go func() {
			defer beatWG.Done()
			s.beat(stop)
		}()
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		s.shutdown()
	}()
	var err error
	for {
		conn, aerr := ln.AcceptUnix()
		if aerr != nil {
			s.mu.Lock()
			stopping := s.stopping
			s.mu.Unlock()
			if !stopping {
				err = fmt.Errorf("accept on CNI report socket: %w", aerr)
				log.Error("CNI report socket failed", "path", s.Path, "err", aerr)
				if s.Heartbeat != nil {
					s.Heartbeat.Fail(err)
				}
			}
			break
		}
		if !s.cap.Admit(conn) {
			conn.Close() // every connection has a report being handled
			continue
		}
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			conn.Close()
			break
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(ctx, conn)
			s.cap.Release(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
		}()
	}
	close(stop)
	s.shutdown()
	s.wg.Wait()
	beatWG.Wait()
	return err
}

func (s *SocketServer) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return
	}
	s.stopping = true
	// Only remove the file if it is still ours (a newer agent may have replaced it).
	if ino, _ := fileIDs(s.Path); ino != s.inode {
		s.ln.SetUnlinkOnClose(false)
	}
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
}

// beat keeps the heartbeat while the socket file is the one we listen on.
func (s *SocketServer) beat(stop <-chan struct{}) {
	period := s.BeatPeriod
	if period <= 0 {
		period = 5 * time.Second
	}
	t := time.NewTicker(period)
	defer t.Stop()
	failed := false
	for {
		if ino, _ := fileIDs(s.Path); ino == 0 || ino != s.inode {
			if !failed {
				s.Heartbeat.Fail(fmt.Errorf("CNI report socket %s was removed or replaced", s.Path))
				s.log().Error("CNI report socket lost", "path", s.Path)
				failed = true
			}
		} else if fi, err := os.Lstat(s.Path); err == nil && fi.Mode().Perm()&^s.mode != 0 {
			// Loosened behind our back: the peer check still holds; a restart makes the file anew.
			if !failed {
				s.Heartbeat.Fail(fmt.Errorf("CNI report socket %s has mode %#o, not %#o", s.Path, fi.Mode().Perm(), s.mode))
				s.log().Error("CNI report socket loosened", "path", s.Path, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()))
				failed = true
			}
		} else {
			if failed {
				s.Heartbeat.Recover()
				failed = false
			}
			s.Heartbeat.Beat()
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (s *SocketServer) handle(ctx context.Context, conn *net.UnixConn) {
	defer conn.Close()
	if err := s.checkPeer(conn); err != nil {
		s.log().Warn("CNI report connection refused", "path", s.Path, "err", err)
		return
	}
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = time.Minute
	}
	r := bufio.NewReaderSize(conn, 4096)
	w := bufio.NewWriter(conn)
	enc := json.NewEncoder(w)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(idle))
		line, err := readLine(r)
		if len(line) > 0 && (err == nil || err == io.EOF) {
			s.cap.Busy(conn)
			resp := s.process(ctx, line)
			s.cap.Idle(conn) // answered: evictable again, before a write to a client that may not read
			_ = enc.Encode(resp)
			// Answer at once unless more lines are already buffered.
			if r.Buffered() == 0 {
				_ = conn.SetWriteDeadline(time.Now().Add(idle))
				if w.Flush() != nil {
					return
				}
			}
		}
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				_ = enc.Encode(Response{Error: err.Error()})
			}
			_ = w.Flush()
			return
		}
	}
}

func (s *SocketServer) process(ctx context.Context, line []byte) Response {
	var rep Report
	// Unknown fields are ignored: newer clients may send more than this agent knows.
	if err := json.Unmarshal(line, &rep); err != nil {
		s.log().Warn("CNI report rejected", "err", err)
		return Response{Error: "invalid report: " + err.Error()}
	}
	rep.Source = "socket"
	if err := s.Reporter.Report(ctx, rep); err != nil {
		s.log().Warn("CNI report rejected", "err", err)
		return Response{Error: "invalid report: " + err.Error()}
	}
	return Response{OK: true}
}

var errLineTooLong = fmt.Errorf("report line longer than %d bytes", MaxReportLine)

// readLine returns one line without its newline (and without a trailing \r); at EOF a last line without
// a newline is returned with io.EOF.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxReportLine {
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && !(err == io.EOF && len(buf) > 0) {
			return trimLine(buf), err
		}
		if err == io.EOF {
			return trimLine(buf), io.EOF
		}
		return trimLine(buf), nil
	}
}

func trimLine(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func (s *SocketServer) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

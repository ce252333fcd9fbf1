package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/canary"
	"github.com/vitalsproject/vitals/netprobe"
)

// prober runs probes from one place on the network and returns one error (a netprobe.Failure) per
// probe; err is set when it could not run them at all (no canary).
type prober interface {
	probe(ctx context.Context, probes []netprobe.Probe) (errs []error, err error)
}

// dialProber runs probes through a dialer: the agent's own namespace, or a namespace it enters.
type dialProber struct{ d netprobe.Dialer }

func (p dialProber) probe(ctx context.Context, probes []netprobe.Probe) ([]error, error) {
	return netprobe.RunAll(ctx, p.d, probes), nil
}

// CanaryLink is the agent's end of the pod network canary (package canary): a unix socket the canary
// of this node connects to, saying who it is, and through which the agent asks it to run probes from
// the pod network. The agent runs on the host network and holds no capability to enter a namespace:
// the canary is its hand on the pod network.
//
// The socket is guarded as the report socket is: its directory must not be writable by others, its
// file is 0600 (0660 admits its group, as the chart's non-root canary needs), and each connection's
// peer must be root, the agent's user or, at 0660, of the socket's group. Whoever connects can claim
// that this node's pods reach nothing; it cannot claim that the node's own address reaches a peer,
// which the agent probes itself.
//
// One canary is linked at a time. Another one (a new pod while the old one terminates) is turned
// away while the linked one answers, and replaces it once it has left a request unanswered: two
// canaries never take turns.
type CanaryLink struct {
	// Path of the socket; its directory is created (0755) if missing.
	Path string
	// Mode of the socket file: 0600 (default) or 0660.
	Mode os.FileMode
	// HelloTimeout bounds the wait for a new connection's Hello; default 5s.
	HelloTimeout time.Duration
	Log          *slog.Logger

	mu       sync.Mutex
	ln       *net.UnixListener
	mode     os.FileMode
	gid      uint32
	cur      *canaryConn
	conns    map[*net.UnixConn]struct{}
	nextID   uint64
	stopping bool
	wg       sync.WaitGroup
}

// canaryConn is one linked canary.
type canaryConn struct {
	conn  *net.UnixConn
	hello canary.Hello
	wmu   sync.Mutex
	w     *bufio.Writer

	mu      sync.Mutex
	pending map[uint64]chan canary.Response
	closed  bool
	// unanswered: its last request went unanswered (cleared by an answer).
	unanswered bool
}

// Listen creates the socket (replacing a stale one) so that the canary can connect once it returns.
func (l *CanaryLink) Listen() error {
	mode := l.Mode
	if mode == 0 {
		mode = 0o600
	}
	ln, err := listenUnix("canary socket", l.Path, mode)
	if err != nil {
		return err
	}
	_, gid := fileIDs(l.Path)
	l.mu.Lock()
	l.ln, l.mode, l.gid = ln, mode, gid
	l.conns = map[*net.UnixConn]struct{}{}
	l.mu.Unlock()
	return nil
}

// Serve accepts canaries until ctx is done, then closes the listener and every connection.
func (l *CanaryLink) Serve(ctx context.Context) error {
	l.mu.Lock()
	ln := l.ln
	l.mu.Unlock()
	if ln == nil {
		return errors.New("serve canary socket: Listen was not called")
	}
	stop := context.AfterFunc(ctx, l.shutdown)
	defer stop()
	var err error
	for {
		conn, aerr := ln.AcceptUnix()
		if aerr != nil {
			l.mu.Lock()
			stopping := l.stopping
			l.mu.Unlock()
			if !stopping {
				err = fmt.Errorf("accept on canary socket: %w", aerr)
				l.log().Error("canary socket failed", "path", l.Path, "err", aerr)
			}
			break
		}
		l.mu.Lock()
		if l.stopping {
			l.mu.Unlock()
			conn.Close()
			break
		}
		l.conns[conn] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			l.handle(conn)
			l.mu.Lock()
			delete(l.conns, conn)
			l.mu.Unlock()
		}()
	}
	l.shutdown()
	l.wg.Wait()
	return err
}

func (l *CanaryLink) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping || l.ln == nil {
		return
	}
	l.stopping = true
	l.ln.Close()
	for c := range l.conns {
		c.Close()
	}
}

// handle admits a canary, reads its Hello, links it and dispatches its responses until it goes.
func (l *CanaryLink) handle(conn *net.UnixConn) {
	defer conn.Close()
	log := l.log()
	if err := checkPeer(conn, l.mode, l.gid); err != nil {
		log.Warn("canary connection refused", "path", l.Path, "err", err)
		return
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 4096), canary.MaxLine)
	helloTimeout := l.HelloTimeout
	if helloTimeout <= 0 {
		helloTimeout = 5 * time.Second
	}
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	var hello canary.Hello
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &hello) != nil || hello.Version != canary.Version {
		log.Warn("canary connection refused: no valid hello", "path", l.Path, "version", hello.Version)
		return
	}
	if hello.PodIP != "" {
		if _, err := netip.ParseAddr(hello.PodIP); err != nil {
			log.Warn("canary connection refused: its pod IP is not an address", "path", l.Path)
			return
		}
	}
	_ = conn.SetReadDeadline(time.Time{})
	cc := &canaryConn{conn: conn, hello: hello, w: bufio.NewWriter(conn), pending: map[uint64]chan canary.Response{}}
	l.mu.Lock()
	old := l.cur
	if old != nil {
		old.mu.Lock()
		answers := !old.unanswered
		old.mu.Unlock()
		if answers {
			l.mu.Unlock()
			log.Warn("canary connection refused: another canary is linked and answers", "pod", hello.Pod, "podIP", hello.PodIP,
				"linkedPod", old.hello.Pod, "linkedPodIP", old.hello.PodIP)
			return
		}
	}
	l.cur = cc
	l.mu.Unlock()
	if old != nil {
		old.conn.Close()
	}
	log.Info("canary linked", "pod", hello.Pod, "podIP", hello.PodIP)
	for sc.Scan() {
		var resp canary.Response
		if json.Unmarshal(sc.Bytes(), &resp) != nil {
			continue
		}
		cc.mu.Lock()
		ch, ok := cc.pending[resp.ID]
		delete(cc.pending, resp.ID)
		cc.unanswered = false
		cc.mu.Unlock()
		if ok {
			ch <- resp // buffered
		}
	}
	cc.mu.Lock()
	cc.closed = true
	for id, ch := range cc.pending {
		close(ch)
		delete(cc.pending, id)
	}
	cc.mu.Unlock()
	l.mu.Lock()
	if l.cur == cc {
		l.cur = nil
	}
	l.mu.Unlock()
	log.Info("canary unlinked", "pod", hello.Pod, "podIP", hello.PodIP)
}

// Canary returns the linked canary's Hello, false when none is linked.
func (l *CanaryLink) Canary() (canary.Hello, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return canary.Hello{}, false
	}
	return l.cur.hello, true
}

// probe asks the linked canary to run probes from the pod network, within ctx's deadline.
func (l *CanaryLink) probe(ctx context.Context, probes []netprobe.Probe) ([]error, error) {
	l.mu.Lock()
	cc := l.cur
	l.nextID++
	id := l.nextID
	l.mu.Unlock()
	if cc == nil {
		return nil, netprobe.NoCanary
	}
	timeout := canary.MaxTimeout
	if dl, ok := ctx.Deadline(); ok {
		// The canary's probes end at three quarters of the time left, so that its answer (each probe
		// that did not complete: "timed out") arrives before the deadline on a busy node too.
		timeout = min(timeout, time.Until(dl)*3/4)
	}
	if timeout < time.Millisecond {
		return nil, netprobe.TimedOut
	}
	req := canary.Request{ID: id, TimeoutMS: timeout.Milliseconds(), Probes: probes}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("canary request: %w", err)
	}
	ch := make(chan canary.Response, 1)
	cc.mu.Lock()
	if cc.closed {
		cc.mu.Unlock()
		return nil, netprobe.NoCanary
	}
	cc.pending[id] = ch
	cc.mu.Unlock()
	forget := func() {
		cc.mu.Lock()
		delete(cc.pending, id)
		cc.unanswered = true
		cc.mu.Unlock()
	}
	body, err := json.Marshal(req)
	if err != nil {
		forget()
		return nil, fmt.Errorf("encode canary request: %w", err)
	}
	cc.wmu.Lock()
	_ = cc.conn.SetWriteDeadline(time.Now().Add(timeout))
	_, err = cc.w.Write(append(body, '\n'))
	if err == nil {
		err = cc.w.Flush()
	}
	cc.wmu.Unlock()
	if err != nil {
		forget()
		cc.conn.Close() // the reader then unlinks it
		return nil, netprobe.CanaryUnavailable
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, netprobe.CanaryUnavailable
		}
		return resp.Errors(len(probes))
	case <-ctx.Done():
		forget()
		return nil, netprobe.CanaryUnavailable
	}
}

func (l *CanaryLink) log() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.Default()
}

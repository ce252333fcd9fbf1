package canary

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/netprobe"
)

// Options configure a canary.
type Options struct {
	// Listen is the TCP address other nodes' agents connect to, such as ":8091".
	Listen string
	// Socket is the node agent's unix socket.
	Socket string
	// Hello says who this canary is.
	Hello Hello
	// Dialer makes the probes' sockets; nil: a net.Dialer (the canary's own namespace, the pod's).
	Dialer netprobe.Dialer
	// MinBackoff and MaxBackoff space the attempts to reach the agent (defaults 1s and 10s: the socket
	// is local, an attempt costs nothing; each wait lengthened by up to half at random).
	MinBackoff, MaxBackoff time.Duration
	Log                    *slog.Logger
}

// Run listens on o.Listen and serves the agent on o.Socket until ctx is done. It returns an error
// when it cannot listen.
func Run(ctx context.Context, o Options) error {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	log := o.log()
	log.Info("canary started", "listen", ln.Addr().String(), "socket", o.Socket, "pod", o.Hello.Pod, "podIP", o.Hello.PodIP)
	var wg sync.WaitGroup
	wg.Go(func() { Serve(ctx, ln) })
	wg.Go(func() { Link(ctx, o) })
	wg.Wait()
	log.Info("canary stopped")
	return nil
}

// Serve accepts connections on ln and closes each at once (the handshake is the answer) until ctx
// is done; then it closes ln.
func Serve(ctx context.Context, ln net.Listener) {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Out of file descriptors and the like: wait a little rather than spin.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		_ = c.Close()
	}
}

// Link connects to the agent's socket and runs its requests until ctx is done, connecting again
// (after a jittered backoff) whenever the connection ends.
func Link(ctx context.Context, o Options) {
	minB, maxB := o.MinBackoff, o.MaxBackoff
	if minB <= 0 {
		minB = time.Second
	}
	if maxB < minB {
		maxB = max(10*time.Second, minB)
	}
	wait := minB
	log := o.log()
	for ctx.Err() == nil {
		served, err := linkOnce(ctx, o)
		if ctx.Err() != nil {
			return
		}
		if served {
			wait = minB
		}
		log.Warn("canary lost its agent", "socket", o.Socket, "err", err, "retryIn", wait.String())
		d := wait + time.Duration(rand.Int64N(int64(wait/2)+1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		wait = min(2*wait, maxB)
	}
}

// linkOnce serves one connection to the agent; served is true once the agent sent a valid request.
func linkOnce(ctx context.Context, o Options) (served bool, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", o.Socket)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	hello := o.Hello
	hello.Version = Version
	var wmu sync.Mutex
	w := bufio.NewWriter(conn)
	enc := json.NewEncoder(w)
	send := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := enc.Encode(v); err != nil {
			return err
		}
		return w.Flush()
	}
	if err := send(hello); err != nil {
		return false, fmt.Errorf("say hello: %w", err)
	}
	dialer := o.Dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, MaxInFlight)
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 4096), MaxLine)
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			_ = send(Response{Error: Invalid})
			continue
		}
		if err := req.Validate(); err != nil {
			_ = send(Response{ID: req.ID, Error: Invalid})
			continue
		}
		served = true
		select {
		case slots <- struct{}{}:
		default:
			_ = send(Response{ID: req.ID, Error: Busy})
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			pctx, pcancel := context.WithTimeout(runCtx, req.Timeout())
			errs := netprobe.RunAll(pctx, dialer, req.Probes)
			pcancel()
			resp := Response{ID: req.ID, Results: make([]string, len(errs))}
			for i, e := range errs {
				if e != nil {
					resp.Results[i] = string(netprobe.Word(e))
				}
			}
			_ = send(resp)
		})
	}
	if err := sc.Err(); err != nil {
		return served, err
	}
	return served, errors.New("the agent closed the connection")
}

func (o Options) log() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.Default()
}

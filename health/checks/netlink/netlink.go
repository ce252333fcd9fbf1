package netlink

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	vnl "github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/vitalsproject/vitals/health/checks"
)

// DefaultSocketTimeout bounds each send and receive on the netlink socket when the context has no
// deadline.
const DefaultSocketTimeout = 5 * time.Second

// Options configure the netlink check.
type Options struct {
	// NetnsPath names a network namespace to run in: a bind-mount such as /var/run/netns/blue or a
	// /proc/<pid>/ns/net path. Empty means the namespace of the calling process.
	NetnsPath string
	// SocketTimeout bounds each netlink send and receive. Zero: the time left before the context's
	// deadline, or DefaultSocketTimeout.
	SocketTimeout time.Duration
}

// Stats is what one successful run saw.
type Stats struct {
	Links  int
	Routes int
}

// Check returns the check: Probe with opts. NetnsPath must be absolute and SocketTimeout not negative.
func Check(opts Options) (checks.Func, error) {
	if opts.NetnsPath != "" && !filepath.IsAbs(opts.NetnsPath) {
		return nil, fmt.Errorf("netlink check: NetnsPath %q: expected an absolute path such as /var/run/netns/probe", opts.NetnsPath)
	}
	if opts.SocketTimeout < 0 {
		return nil, fmt.Errorf("netlink check: SocketTimeout %s: expected 0 (the default) or more", opts.SocketTimeout)
	}
	return func(ctx context.Context) error {
		_, err := Probe(ctx, opts)
		return err
	}, nil
}

// Probe opens a routing netlink socket, lists links and routes, and returns how many it saw. It returns
// when ctx is done even if the kernel has not answered; the socket timeout then ends the abandoned call.
func Probe(ctx context.Context, opts Options) (Stats, error) {
	timeout := opts.SocketTimeout
	if timeout <= 0 {
		timeout = DefaultSocketTimeout
		if dl, ok := ctx.Deadline(); ok {
			if left := time.Until(dl); left > 0 {
				timeout = left
			} else {
				return Stats{}, fmt.Errorf("netlink probe: %w", context.DeadlineExceeded)
			}
		}
	}
	if timeout < time.Millisecond {
		timeout = time.Millisecond
	}
	type outcome struct {
		stats Stats
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		s, err := probe(opts.NetnsPath, timeout)
		done <- outcome{s, err}
	}()
	select {
	case o := <-done:
		return o.stats, o.err
	case <-ctx.Done():
		return Stats{}, fmt.Errorf("netlink probe: %w", ctx.Err())
	}
}

func probe(nsPath string, timeout time.Duration) (Stats, error) {
	h, err := openHandle(nsPath)
	if err != nil {
		return Stats{}, err
	}
	defer h.Close()
	if err := h.SetSocketTimeout(timeout); err != nil {
		return Stats{}, fmt.Errorf("set netlink socket timeout: %w", err)
	}
	links, err := h.LinkList()
	if err != nil && !errors.Is(err, vnl.ErrDumpInterrupted) {
		return Stats{}, fmt.Errorf("list links over netlink: %w", err)
	}
	if len(links) == 0 && err == nil {
		// Every network namespace has at least a loopback device.
		return Stats{}, errors.New("list links over netlink: the kernel returned no links")
	}
	routes, err := h.RouteList(nil, vnl.FAMILY_ALL)
	if err != nil && !errors.Is(err, vnl.ErrDumpInterrupted) {
		return Stats{}, fmt.Errorf("list routes over netlink: %w", err)
	}
	return Stats{Links: len(links), Routes: len(routes)}, nil
}

// openHandle opens a NETLINK_ROUTE handle in the current namespace or in the one at nsPath. The socket
// stays bound to that namespace after the calling thread returns to its own.
func openHandle(nsPath string) (*vnl.Handle, error) {
	if nsPath == "" {
		h, err := vnl.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("open netlink socket: %w", err)
		}
		return h, nil
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", nsPath, err)
	}
	defer ns.Close()
	h, err := vnl.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open netlink socket in network namespace %s: %w", nsPath, err)
	}
	return h, nil
}

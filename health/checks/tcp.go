package checks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// TCPOptions configure TCP.
type TCPOptions struct {
	// Address is host:port ("127.0.0.1:5672", "[::1]:6379", "rabbit:5672").
	Address string
	// Timeout of the dial; default 5s.
	Timeout time.Duration
}

// TCP checks that a TCP connection to Address can be opened (and closes it at once).
func TCP(opts TCPOptions) (Func, error) {
	if _, _, err := net.SplitHostPort(opts.Address); err != nil {
		return nil, fmt.Errorf("tcp check: address %q: expected host:port: %w", opts.Address, err)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	if timeout < 0 {
		return nil, errors.New("tcp check: negative timeout")
	}
	d := net.Dialer{Timeout: timeout}
	return func(ctx context.Context) error {
		conn, err := d.DialContext(ctx, "tcp", opts.Address)
		if err != nil {
			return fmt.Errorf("%s: %s", opts.Address, describeRequestError(ctx, err, timeout))
		}
		observe(ctx, conn.RemoteAddr().String())
		return conn.Close()
	}, nil
}

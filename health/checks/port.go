package checks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// PortOptions configure Port.
type PortOptions struct {
	// Process that must hold the socket; an empty Name accepts a socket of any process.
	Process ProcessMatch
	// Ports, any of which will do (1-65535).
	Ports []int
	// Listen asks for a listening socket on a local port: TCP in LISTEN, or a bound, unconnected
	// UDP socket. Without it any socket whose local or remote port is in Ports counts, so
	// "nova-conductor holds a connection to RabbitMQ on 5672" is expressed as Port{5672}.
	Listen bool
	// Established counts, of the TCP sockets that are not listening, only those in ESTABLISHED:
	// a connection the peer closed (CLOSE_WAIT, until the process notices) or one still opening
	// is no connection to RabbitMQ.
	Established bool
	// Protocols to look at: "tcp", "udp" or both (the default); IPv4 and IPv6 each.
	Protocols []string
	// Root is the filesystem root under which /proc is read; "" means "/".
	Root string
}

// Port checks that a process holds (or listens on) a TCP or UDP socket on one of the ports,
// reading /proc/net/{tcp,tcp6,udp,udp6} and the socket inodes in /proc/<pid>/fd: no lsof, no ss.
// The tables are those of the caller's network namespace, which inside a container is the
// container's.
func Port(opts PortOptions) (Func, error) {
	if len(opts.Ports) == 0 {
		return nil, errors.New("port check: no ports")
	}
	ports := make(map[uint16]bool, len(opts.Ports))
	for _, p := range opts.Ports {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("port check: port %d out of range 1-65535", p)
		}
		ports[uint16(p)] = true
	}
	protos := opts.Protocols
	if len(protos) == 0 {
		protos = []string{"tcp", "udp"}
	}
	for _, p := range protos {
		if p != "tcp" && p != "udp" {
			return nil, fmt.Errorf("port check: unknown protocol %q (expected tcp or udp)", p)
		}
	}
	portList := joinInts(opts.Ports)
	kind := "socket"
	if opts.Listen {
		kind = "listening socket"
	}
	return func(ctx context.Context) error {
		// The matching processes' sockets first: a missing process fails without reading the
		// socket tables, and the tables are read only until a held socket shows up.
		var held map[uint64]int
		var pids []int
		var note string
		if opts.Process.Name != "" {
			var err error
			if held, pids, note, err = heldSockets(opts.Root, opts.Process); err != nil {
				return err
			}
			if len(held) == 0 {
				return fmt.Errorf("process %s (pid %s) holds no socket at all%s", opts.Process, pidList(pids), note)
			}
		}
		var found *inetSocket
		err := readInetSockets(opts.Root, protos, func(s inetSocket) int {
			if opts.Listen && s.tcp() && !s.listening() {
				// The kernel lists every listening TCP socket before the others.
				return skipTable
			}
			if s.inode == 0 {
				return nextSocket // TIME_WAIT and the like: owned by no process
			}
			if opts.Established && s.tcp() && !s.listening() && s.state != tcpEstablished {
				return nextSocket // half-closed (CLOSE_WAIT), closing or opening
			}
			match := ports[s.local.Port()] || (ports[s.remote.Port()] && !s.listening())
			if opts.Listen {
				match = s.listening() && ports[s.local.Port()]
			}
			if !match {
				return nextSocket
			}
			if held != nil {
				if _, ok := held[s.inode]; !ok {
					return nextSocket
				}
			}
			found = &s
			return stopAll
		})
		if err != nil {
			return fmt.Errorf("read sockets: %w", err)
		}
		switch {
		case found == nil && held == nil:
			return fmt.Errorf("no %s on port %s", kind, portList)
		case found == nil:
			return fmt.Errorf("process %s (pid %s) holds no %s on port %s%s",
				opts.Process, pidList(pids), kind, portList, note)
		case held != nil:
			observe(ctx, found.String()+" pid "+strconv.Itoa(held[found.inode]))
		default:
			observe(ctx, found.String())
		}
		return nil
	}, nil
}

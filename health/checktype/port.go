package checktype

import (
	"github.com/vitalsproject/vitals/health/checks"
)

// portType declares the port check type: any socket on the ports (a connection to RabbitMQ, or a
// listening socket).
func portType() Type {
	return socketsType("port", false, "a process matching PROCESS holds a TCP or UDP socket whose local or remote port is one of PORTS (connected to RabbitMQ on 5672, or listening)")
}

// listenType declares the listen check type: port with listening sockets only.
func listenType() Type {
	return socketsType("listen", true, "a process matching PROCESS listens on one of PORTS (TCP in LISTEN, or a bound UDP socket)")
}

// socketsType declares port and listen: the same options, listen fixed for the latter.
func socketsType(name string, listen bool, doc string) Type {
	opts := []Option{
		{Name: "process", Doc: "process that must hold the socket (any process when empty)"},
		{Name: "ports", Kind: Ports, Required: true, Arg: "PORT", Doc: "ports, any of which will do (`5671,5672` is two)"},
		{Name: "protocols", Kind: Strings, Arg: "PROTO", Doc: "`tcp`, `udp` (default both; IPv4 and IPv6 each)",
			Aliases: []Alias{{Name: "tcp", Value: "tcp", Deprecated: true}, {Name: "udp", Value: "udp", Deprecated: true}}},
		cmdline,
	}
	if !listen {
		opts = append(opts, Option{Name: "listen", Kind: Bool, Doc: "only a listening socket on a local port counts (the listen type)"},
			Option{Name: "established", Kind: Bool, Doc: "of the TCP connections, only those in ESTABLISHED count, not a half-closed one (`CLOSE_WAIT`: the peer went away); on in a config file and in `vitals serve`, off on the command line, as TripleO's `healthcheck_port` (`ss -ntp`) counts it"})
	}
	return Type{
		Name: name, Args: []string{"process", "ports"}, Doc: doc, Options: opts,
		New: func(v *Values) (checks.Func, error) {
			return checks.Port(checks.PortOptions{Process: processMatch(v),
				Ports: v.Ports("ports"), Listen: listen || v.Bool("listen"), Established: !listen && v.Bool("established"), Protocols: v.Strings("protocols")})
		},
	}
}

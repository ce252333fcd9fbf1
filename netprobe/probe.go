package netprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Dialer opens a connection (a *net.Dialer is one). Its errors are turned into Failures.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Failure is what went wrong with a probe, in a few fixed words.
type Failure string

func (f Failure) Error() string { return string(f) }

// The Failures of a probe. A DNS server's answer code is also one: "the server answered NXDOMAIN".
const (
	TimedOut          Failure = "timed out"
	Canceled          Failure = "canceled"
	Refused           Failure = "connection refused"
	NoRoute           Failure = "no route"
	NotPermitted      Failure = "not permitted"
	Failed            Failure = "failed"
	NoAddress         Failure = "no address in the answer"
	MalformedAnswer   Failure = "malformed answer"
	InvalidName       Failure = "invalid name"
	NetnsOpenFailed   Failure = "cannot open the network namespace"
	NetnsEnterFailed  Failure = "cannot enter the network namespace"
	NoCanary          Failure = "the canary is not connected"
	CanaryUnavailable Failure = "the canary did not answer"
)

var (
	words = map[Failure]bool{TimedOut: true, Canceled: true, Refused: true, NoRoute: true, NotPermitted: true,
		Failed: true, NoAddress: true, MalformedAnswer: true, InvalidName: true, NetnsOpenFailed: true,
		NetnsEnterFailed: true, NoCanary: true, CanaryUnavailable: true}
	rcodeWords = regexp.MustCompile(`^the server answered (FORMERR|SERVFAIL|NXDOMAIN|NOTIMP|REFUSED|rcode [0-9]{1,5})$`)
)

// Canonical returns the Failure that s names, or Failed when s is not one of the fixed words: what a
// remote prober (the canary) reports is taken as a word, never as text.
func Canonical(s string) Failure {
	if f := Failure(s); words[f] || rcodeWords.MatchString(s) {
		return f
	}
	return Failed
}

// Word says what went wrong in a few fixed words: a Failure stays itself, a dial or I/O error becomes
// one, anything else is Failed.
func Word(err error) Failure {
	var f Failure
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &f):
		return Canonical(string(f))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return TimedOut
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return NoRoute
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return NotPermitted
	}
	return Failed
}

// Probe is one probe: a TCP connection to TCP (ip:port), or a query for DNS's address through Server
// (ip:port). It is also the canary's wire form (package canary).
type Probe struct {
	TCP    string `json:"tcp,omitempty"`
	DNS    string `json:"dns,omitempty"`
	Server string `json:"server,omitempty"`
}

// Validate checks a probe's addresses and name.
func (p Probe) Validate() error {
	switch {
	case p.TCP != "" && p.DNS == "" && p.Server == "":
		_, err := ParseTarget(p.TCP)
		return err
	case p.TCP == "" && p.DNS != "":
		if err := ValidDNSName(p.DNS); err != nil {
			return err
		}
		ap, err := netip.ParseAddrPort(p.Server)
		if err != nil || ap.Port() == 0 {
			return fmt.Errorf("expected the DNS server as ip:port, got %q", p.Server)
		}
		return nil
	}
	return errors.New("expected either tcp, or dns with server")
}

// Run runs the probe through d; the error is a Failure. p must be valid.
func (p Probe) Run(ctx context.Context, d Dialer) error {
	if p.TCP != "" {
		return TCP(ctx, d, p.TCP)
	}
	server, err := netip.ParseAddrPort(p.Server)
	if err != nil {
		return Failed
	}
	return DNS(ctx, d, server, p.DNS)
}

// RunAll runs every probe at once through d and returns their errors (Failures), in order.
func RunAll(ctx context.Context, d Dialer, probes []Probe) []error {
	errs := make([]error, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Go(func() { errs[i] = p.Run(ctx, d) })
	}
	wg.Wait()
	return errs
}

// TCP opens a TCP connection to target through d and closes it (nothing is sent).
func TCP(ctx context.Context, d Dialer, target string) error {
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return Word(err)
	}
	_ = conn.Close()
	return nil
}

// DNS asks server for name's A record (and AAAA if there is none) over UDP through d. Only the
// answer's code and record count are read: what the server says never reaches an error.
func DNS(ctx context.Context, d Dialer, server netip.AddrPort, name string) error {
	fqdn := name
	if !strings.HasSuffix(fqdn, ".") {
		fqdn += "."
	}
	for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		n, err := query(ctx, d, server, fqdn, typ)
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return NoAddress
}

// query sends one query and returns how many answers of typ came back.
func query(ctx context.Context, d Dialer, server netip.AddrPort, fqdn string, typ dnsmessage.Type) (int, error) {
	qname, err := dnsmessage.NewName(fqdn)
	if err != nil {
		return 0, InvalidName
	}
	id := uint16(time.Now().UnixNano())
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: qname, Type: typ, Class: dnsmessage.ClassINET}},
	}
	packet, err := q.Pack()
	if err != nil {
		return 0, InvalidName
	}
	conn, err := d.DialContext(ctx, "udp", server.String())
	if err != nil {
		return 0, Word(err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(packet); err != nil {
		return 0, Word(err)
	}
	buf := make([]byte, 1232)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return 0, Word(err)
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil || h.ID != id || !h.Response {
			continue // not the answer to our query: wait for it
		}
		if h.RCode != dnsmessage.RCodeSuccess {
			return 0, Failure("the server answered " + rcodeName(h.RCode))
		}
		if err := p.SkipAllQuestions(); err != nil {
			return 0, MalformedAnswer
		}
		count := 0
		for {
			ah, err := p.AnswerHeader()
			if errors.Is(err, dnsmessage.ErrSectionDone) {
				return count, nil
			}
			if err != nil {
				return 0, MalformedAnswer
			}
			if ah.Type == typ {
				count++
			}
			if err := p.SkipAnswer(); err != nil {
				return 0, MalformedAnswer
			}
		}
	}
}

// rcodeName names the codes a server answers with; others by number.
func rcodeName(c dnsmessage.RCode) string {
	switch c {
	case dnsmessage.RCodeFormatError:
		return "FORMERR"
	case dnsmessage.RCodeServerFailure:
		return "SERVFAIL"
	case dnsmessage.RCodeNameError:
		return "NXDOMAIN"
	case dnsmessage.RCodeNotImplemented:
		return "NOTIMP"
	case dnsmessage.RCodeRefused:
		return "REFUSED"
	}
	return fmt.Sprintf("rcode %d", uint16(c))
}

// ParseTarget parses ip:port (a name would need DNS, which is what a DNS probe checks).
func ParseTarget(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("expected ip:port (such as 10.96.0.1:443 or [fd00::1]:443), got %q", s)
	}
	return ap, nil
}

// ParseDNSServer parses ip or ip:port, port 53 by default.
func ParseDNSServer(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 53), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("expected an IP address, optionally with a port (such as 10.96.0.10 or 10.96.0.10:53), got %q", s)
	}
	return ap, nil
}

// ValidDNSName checks a DNS name (labels of letters, digits, '-' and '_', at most 253 bytes).
func ValidDNSName(n string) error {
	fq := strings.TrimSuffix(n, ".")
	bad := fmt.Errorf("expected a DNS name (such as kubernetes.default.svc.cluster.local), got %q", n)
	if fq == "" || len(fq) > 253 {
		return bad
	}
	for _, label := range strings.Split(fq, ".") {
		if len(label) == 0 || len(label) > 63 {
			return bad
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return bad
			}
		}
	}
	return nil
}

package checks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// HTTPOptions configure HTTP.
type HTTPOptions struct {
	// URL to request: http or https; IPv6 literals in brackets ("http://[::1]:8080/") work.
	URL string
	// Method: GET (default) or HEAD.
	Method string
	// Header is added to the request.
	Header http.Header
	// StatusMin and StatusMax bound the accepted status codes; zero means 200-399, like curl --fail
	// without redirects (3xx responses are not followed).
	StatusMin, StatusMax int
	// Contains, when set, must appear in the first MaxBody bytes of the body.
	Contains string
	// MaxBody bounds what is read for Contains; default 1 MiB.
	MaxBody int64
	// Timeout of the whole exchange; default 10s. The check's context can shorten it.
	Timeout time.Duration
	// Insecure skips verification of the server's certificate.
	Insecure bool
	// CAFile is a PEM bundle that replaces the system roots.
	CAFile string
	// ServerName overrides the name verified in the server's certificate.
	ServerName string
	// CertFile and KeyFile are a client certificate and key (PEM), for mutual TLS.
	CertFile, KeyFile string
	// Judge, when set, replaces the status and Contains tests: it gets the status and the first
	// MaxBody bytes of the body and returns why they are unhealthy, or nil.
	Judge func(status int, body []byte) error
	// MaxHeaderBytes and MaxHeaderFields bound the response's header (each 1xx response's too);
	// zero means MaxResponseHeaderBytes and MaxResponseHeaderFields. A longer header fails the
	// check; a hostile server cannot make the check grow.
	MaxHeaderBytes  int64
	MaxHeaderFields int
	// Proxy sends the request through the proxy named by HTTP_PROXY / HTTPS_PROXY, honouring
	// NO_PROXY (either case). Off by default: a local health endpoint must never be reached
	// through a proxy that the environment happens to set for other traffic.
	Proxy bool
}

// Bounds of a response's header: a health endpoint answers a few hundred bytes of header; Go's
// default would let a server make every run hold 10 MiB.
const (
	MaxResponseHeaderBytes  = 16 << 10
	MaxResponseHeaderFields = 100
)

// HTTP checks that a request to URL answers a status within range and, optionally, a body
// containing a text. Like curl --fail, the body of a GET is read to its end (in constant memory,
// within the timeout): a body cut off before its length or its last chunk, or a connection reset
// while it is read, fails the check, as curl exits 18 or 56 there. A failure names the target and the reason ("127.0.0.1:8080/health:
// connection refused"); success reports the status ("200 127.0.0.1:8080/health").
func HTTP(opts HTTPOptions) (Func, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("http check: bad URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http check: URL %q: expected an http:// or https:// URL", opts.URL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("http check: URL %q has no host", opts.URL)
	}
	method := strings.ToUpper(opts.Method)
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodHead:
	default:
		return nil, fmt.Errorf("http check: method %q: expected GET or HEAD", opts.Method)
	}
	lo, hi := opts.StatusMin, opts.StatusMax
	if lo == 0 && hi == 0 {
		lo, hi = 200, 399
	}
	if lo < 100 || hi > 599 || lo > hi {
		return nil, fmt.Errorf("http check: status range %d-%d: expected 100 <= min <= max <= 599", lo, hi)
	}
	if (opts.Contains != "" || opts.Judge != nil) && method == http.MethodHead {
		return nil, errors.New("http check: a body match needs GET, not HEAD")
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if timeout < 0 {
		return nil, fmt.Errorf("http check: negative timeout %s", timeout)
	}
	maxBody := opts.MaxBody
	if maxBody <= 0 {
		maxBody = 1 << 20
	}
	tlsConf, err := httpTLSConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("http check: %w", err)
	}
	maxHeader, maxFields := opts.MaxHeaderBytes, opts.MaxHeaderFields
	if maxHeader <= 0 {
		maxHeader = MaxResponseHeaderBytes
	}
	if maxFields <= 0 {
		maxFields = MaxResponseHeaderFields
	}
	tr := &http.Transport{
		MaxResponseHeaderBytes: maxHeader,
		DialContext:            (&net.Dialer{Timeout: timeout}).DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    timeout,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		ResponseHeaderTimeout:  timeout,
	}
	if opts.Proxy {
		tr.Proxy = http.ProxyFromEnvironment
	}
	client := &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	target := u.Host + u.EscapedPath()
	want := strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, method, opts.URL, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		for k, v := range opts.Header {
			req.Header[k] = v
		}
		if req.Header.Get("User-Agent") == "" {
			req.Header.Set("User-Agent", "vitals-healthcheck")
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %s", target, describeRequestError(ctx, err, timeout))
		}
		defer resp.Body.Close()
		if n := headerFields(resp.Header); n > maxFields {
			return fmt.Errorf("%s: status %d, %d header fields (at most %d)", target, resp.StatusCode, n, maxFields)
		}
		if resp.StatusCode < lo || resp.StatusCode > hi {
			if opts.Judge == nil { // failed already: a snippet of the body says why
				snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
				msg := fmt.Sprintf("%s: status %d (want %s)", target, resp.StatusCode, want)
				if s := oneLine(string(snippet), 120); s != "" {
					msg += ": " + s
				}
				return errors.New(msg)
			}
		}
		// The first maxBody bytes are kept when something judges them, the rest is read and
		// dropped: the whole body must arrive.
		keep := int64(0)
		if opts.Judge != nil || opts.Contains != "" {
			keep = maxBody
		}
		body, err := readBody(resp.Body, keep)
		if err != nil {
			return fmt.Errorf("%s: status %d, body cut off: %s", target, resp.StatusCode, describeBodyError(ctx, err, timeout))
		}
		if opts.Judge != nil {
			if err := opts.Judge(resp.StatusCode, body); err != nil {
				return fmt.Errorf("%s: %w", target, err)
			}
		} else if opts.Contains != "" && !strings.Contains(string(body), opts.Contains) {
			return fmt.Errorf("%s: status %d, body lacks %q", target, resp.StatusCode, opts.Contains)
		}
		observe(ctx, strconv.Itoa(resp.StatusCode)+" "+target)
		return nil
	}, nil
}

// readBody reads r to its end, keeping the first keep bytes.
func readBody(r io.Reader, keep int64) ([]byte, error) {
	var kept []byte
	if keep > 0 {
		var err error
		if kept, err = io.ReadAll(io.LimitReader(r, keep)); err != nil {
			return kept, err
		}
	}
	_, err := io.CopyBuffer(io.Discard, r, make([]byte, 8<<10))
	return kept, err
}

// headerFields counts the header's field lines.
func headerFields(h http.Header) int {
	n := 0
	for _, v := range h {
		n += len(v)
	}
	return n
}

// describeBodyError words a failed body read as curl does: a body shorter than announced (curl's
// 18), a connection reset (56), or the timeout.
func describeBodyError(ctx context.Context, err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before the end of the body"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	}
	return describeRequestError(ctx, err, timeout)
}

func httpTLSConfig(opts HTTPOptions) (*tls.Config, error) {
	c := &tls.Config{InsecureSkipVerify: opts.Insecure, ServerName: opts.ServerName} //nolint:gosec // asked for
	if opts.CAFile != "" {
		pem, err := bounded.ReadFile(context.Background(), opts.CAFile, bounded.CertSize)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", opts.CAFile)
		}
		c.RootCAs = pool
	}
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return nil, errors.New("a client certificate needs both a certificate and a key file")
	}
	if opts.CertFile != "" {
		certPEM, err := bounded.ReadFile(context.Background(), opts.CertFile, bounded.CertSize)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		keyPEM, err := bounded.ReadFile(context.Background(), opts.KeyFile, bounded.CertSize)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// describeRequestError turns a client error into its reason: "connection refused",
// "timeout after 10s", "tls: failed to verify certificate: ...".
func describeRequestError(ctx context.Context, err error, timeout time.Duration) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		if d, ok := ctx.Deadline(); ok && time.Until(d) <= 0 {
			return "timeout (deadline of the check)"
		}
		return "timeout after " + timeout.String()
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}

// oneLine squeezes whitespace runs (newlines included) into single spaces and cuts to max bytes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// ParseStatusRange parses "200", "200-399" or "2xx" into an inclusive range.
func ParseStatusRange(s string) (lo, hi int, err error) {
	s = strings.TrimSpace(s)
	if len(s) == 3 && strings.HasSuffix(strings.ToLower(s), "xx") && s[0] >= '1' && s[0] <= '5' {
		lo = int(s[0]-'0') * 100
		return lo, lo + 99, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	if err1 != nil || err2 != nil || lo < 100 || hi > 599 || lo > hi {
		return 0, 0, fmt.Errorf("status %q: expected a code, a range such as 200-399, or 2xx", s)
	}
	return lo, hi, nil
}

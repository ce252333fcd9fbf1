package workload

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
	"strings"
	"syscall"
	"time"
)

// probe asks the API whether it is ready: GET /readyz (falling back to /version where /readyz is not
// allowed or not served). The answer's body is never read into the result: a hostile server chooses it.
func probe(ctx context.Context, hc *http.Client, host string) error {
	err := get(ctx, hc, host, "/readyz")
	var st statusError
	if errors.As(err, &st) && (st.code == http.StatusForbidden || st.code == http.StatusNotFound) {
		err = get(ctx, hc, host, "/version")
	}
	return err
}

type statusError struct {
	code int
	path string
}

func (e statusError) Error() string {
	return fmt.Sprintf("the API answered %d %s on %s", e.code, http.StatusText(e.code), e.path)
}

func get(ctx context.Context, hc *http.Client, host, path string) error {
	u, err := url.Parse(host)
	if err != nil {
		return err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return statusError{code: resp.StatusCode, path: path}
	}
	return nil
}

// describe turns a probe error into an *Error whose message holds no address, name or certificate field
// of the tenant's kubeconfig or server: a category only. nil stays nil.
func describe(err error, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	var st statusError
	if errors.As(err, &st) {
		if st.code == http.StatusUnauthorized {
			return errorf(ReasonUnauthorized, "the API refused the kubeconfig's credentials (401 Unauthorized)")
		}
		if st.code == http.StatusForbidden {
			return errorf(ReasonUnauthorized, "the API forbids the kubeconfig's user even /version (403 Forbidden)")
		}
		return errorf(ReasonUnreachable, "%s", st.Error())
	}
	for _, known := range []error{errForbiddenAddress, errRedirect, errHeaderTimeout, errRequestTimeout, errTooLarge} {
		if errors.Is(err, known) {
			return errorf(ReasonUnreachable, "%s", known.Error())
		}
	}
	var (
		dnsErr   *net.DNSError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		verify   *tls.CertificateVerificationError
		netErr   net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return errorf(ReasonUnreachable, "no answer within %s", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return errorf(ReasonUnreachable, "connection refused")
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(ReasonUnreachable, "the connection was closed by the server")
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return errorf(ReasonUnreachable, "no route to the server")
	case errors.As(err, &dnsErr):
		return errorf(ReasonUnreachable, "the server's host name does not resolve")
	case errors.As(err, &unknown):
		return errorf(ReasonUnreachable, "the server's certificate is not signed by the kubeconfig's certificate authority")
	case errors.As(err, &hostname):
		return errorf(ReasonUnreachable, "the server's certificate is not valid for the server's address")
	case errors.As(err, &invalid):
		return errorf(ReasonUnreachable, "the server's certificate is invalid or expired")
	case errors.As(err, &verify):
		return errorf(ReasonUnreachable, "the server's certificate does not verify")
	case errors.As(err, &record):
		return errorf(ReasonUnreachable, "the server does not speak TLS")
	}
	return errorf(ReasonUnreachable, "the API could not be reached")
}

package workload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	kchecks "github.com/vitalsproject/vitals/health/checks/kubernetes"
)

// newProbe returns the API half of an access's health: the kube-apiserver's GET /readyz, over the
// access's own HTTP client (its limits, no redirects) but with a rate limiter of its own, so that a
// busy informer never delays the probe.
func newProbe(c *connection, minInterval time.Duration, clk clock.PassiveClock) (func(context.Context) error, error) {
	cfg := rest.CopyConfig(c.cfg)
	cfg.RateLimiter = nil
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, c.http)
	if err != nil {
		return nil, errorf(ReasonInvalidKubeconfig, "build the probe of the workload cluster")
	}
	return kchecks.Readyz(kchecks.ReadyzOptions{Client: dc.RESTClient(), Options: kchecks.Options{MinInterval: minInterval, Clock: clk}})
}

// describe turns a probe error into an *Error whose message holds no address, name or certificate field
// of the tenant's kubeconfig: every transport error (they all come as *url.Error, which names the URL) is
// told by its category only. What the server itself says (the failed checks of /readyz) is kept,
// shortened. nil stays nil.
func describe(err error, timeout time.Duration) error { return Describe(err, "/readyz", timeout) }

// Describe is describe for any request of the workload API: what names the request ("/readyz", "the
// Nodes"), timeout the request's. It is how everything that reports a failed workload request (the
// operator, vitals doctor) tells it.
func Describe(err error, what string, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	var (
		status apierrors.APIStatus
		urlErr *url.Error
	)
	switch {
	case apierrors.IsUnauthorized(err):
		return errorf(ReasonUnauthorized, "the API refused the kubeconfig's credentials (401 Unauthorized)")
	case apierrors.IsForbidden(err):
		return errorf(ReasonUnauthorized, "the API forbids the kubeconfig's user to read %s (403 Forbidden)", what)
	case errors.As(err, &status) && !errors.As(err, &urlErr):
		code := status.Status().Code
		return errorf(ReasonUnreachable, "the API answered %d on %s", code, what)
	case !errors.As(err, &urlErr) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		// not a transport error: the server's own account of what is not ready
		return errorf(ReasonUnreachable, "not ready: %s", shorten(err.Error(), 300))
	}
	for _, known := range []error{errForbiddenAddress, errLoopbackAddress, errRedirect, errHeaderTimeout, errRequestTimeout, errTooLarge} {
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

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

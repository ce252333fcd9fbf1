package tenancy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/openstack"
)

// Connection is a cloud connected with one set of credentials.
type Connection interface {
	Cloud
	openstack.Networks
	// ProjectID is the project the credentials' token is scoped to ("" when unscoped).
	ProjectID() string
}

var _ Connection = (*openstack.Cloud)(nil)

// ConnectFunc connects with a tenant's credentials over transport (nil: the default one).
type ConnectFunc func(ctx context.Context, a openstack.Auth, transport http.RoundTripper) (Connection, error)

// errDenied is returned by the guarded dialer for an address the operator does not connect to.
var errDenied = errors.New("address not allowed for a tenant's cloud")

// deniedAddr reports addresses a tenant's cloud may not make the operator connect to: its own host
// (loopback: its health and metrics ports, a sidecar), the link-local range (the cloud's metadata
// service, which answers with the node's credentials) and addresses that are no host.
func deniedAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() ||
		a.IsUnspecified() || a.IsInterfaceLocalMulticast()
}

// guardedTransport is an HTTP transport that refuses to dial denied addresses (after name resolution,
// so a host name that resolves to one is refused too, and so is a redirect or a catalog endpoint).
// denied records that it refused one, for the error message.
type guardedTransport struct {
	*http.Transport
	denied atomic.Bool
}

func newGuardedTransport(tlsConfig *tls.Config) *guardedTransport {
	g := &guardedTransport{}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return errDenied
			}
			ip, err := netip.ParseAddr(host)
			if err != nil || deniedAddr(ip) {
				g.denied.Store(true)
				return errDenied
			}
			return nil
		}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	t.Proxy = nil // a proxy would dial on our behalf, past the guard
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig.Clone()
	}
	g.Transport = t
	return g
}

// trustedAuthURL reports whether raw starts with one of the prefixes the operator trusts (scheme,
// host and port equal; path prefix).
func trustedAuthURL(raw string, prefixes []string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	for _, p := range prefixes {
		pu, err := url.Parse(p)
		if err != nil {
			continue
		}
		if strings.EqualFold(u.Scheme, pu.Scheme) && strings.EqualFold(u.Host, pu.Host) &&
			strings.HasPrefix(u.EscapedPath(), strings.TrimSuffix(pu.EscapedPath(), "/")) {
			return true
		}
	}
	return false
}

// connectError explains why connecting with a Secret's credentials failed, without quoting anything a
// Keystone (possibly any server a tenant named) answered: a Refusal, InvalidCredentials when the
// credentials or their target are at fault, CloudUnavailable when nothing was proven either way.
func connectError(source string, err error, denied bool) *Refusal {
	var code gophercloud.ErrUnexpectedResponseCode
	switch {
	case denied:
		return &Refusal{Reason: ReasonInvalidCredentials, Message: fmt.Sprintf(
			"%s: auth_url or a catalog endpoint is a loopback, link-local or multicast address, which the operator does not connect to for a Secret", source)}
	case errors.Is(err, openstack.ErrWrongCredentials):
		return &Refusal{Reason: ReasonInvalidCredentials, Message: fmt.Sprintf("%s: Keystone refused the credentials (401)", source)}
	case errors.Is(err, openstack.ErrUntrustedCertificate):
		return &Refusal{Reason: ReasonInvalidCredentials, Message: fmt.Sprintf(
			"%s: Keystone's TLS certificate is not trusted (give its CA inline: cacert: | -----BEGIN CERTIFICATE-----... in the cloud's entry)", source)}
	case errors.Is(err, openstack.ErrUnreachable):
		return &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: Keystone cannot be reached", source)}
	case errors.As(err, &code):
		return &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: Keystone answered HTTP %d", source, code.Actual)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: authentication timed out", source)}
	}
	return &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: authentication failed", source)}
}

// reauthRefusal classifies a re-authentication that failed inside a later request as the first authentication
// is classified (connectError): the credentials refused are InvalidCredentials, anything else CloudUnavailable.
// nil when err is no failed re-authentication.
func reauthRefusal(source string, err error) *Refusal {
	class, code := openstack.ClassOf(err)
	if class != openstack.ClassReauthentication {
		return nil
	}
	switch {
	case errors.Is(err, openstack.ErrWrongCredentials):
		return &Refusal{Reason: ReasonInvalidCredentials, Message: fmt.Sprintf("%s: Keystone refused the credentials on re-authentication (401)", source)}
	case code != 0:
		return &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: Keystone answered HTTP %d on re-authentication", source, code)}
	}
	return &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: Keystone cannot be reached for re-authentication", source)}
}

var _ CredentialReader = (*openstack.Cloud)(nil)

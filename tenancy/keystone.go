package tenancy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/openstack"
)

// DefaultAuthTimeout bounds one authentication with other credentials against a cluster's Keystone.
const DefaultAuthTimeout = 15 * time.Second

// ReasonOtherKeystone: credentials name another Keystone than the one the cluster's own credentials proved;
// the operator does not connect to it.
const ReasonOtherKeystone = "OtherKeystone"

// Keystone is the Keystone a cluster's own credentials proved (Scope.Keystone). Other credentials of the
// cluster (its workload cluster's cloud controller manager's, Cinder CSI's) are tried against it and only it:
// whoever can write a Secret in the workload cluster must not make the operator dial a URL of their choice.
type Keystone struct {
	// auth is the cluster's: its endpoint, region, interface and TLS settings; its credentials are never
	// used from here.
	auth    openstack.Auth
	trusted bool // the endpoint is the operator's, or a trusted prefix: no guarded transport
	connect ConnectFunc
	timeout time.Duration
}

// NewKeystone is the Keystone of a connection made with auth (trusted: its endpoint is the operator's or
// one of TrustedAuthURLs, dialed without the guarded transport); connect connects (nil: openstack.Connect).
func NewKeystone(auth openstack.Auth, trusted bool, connect ConnectFunc) *Keystone {
	if connect == nil {
		connect = func(ctx context.Context, a openstack.Auth, tr http.RoundTripper) (Connection, error) {
			return openstack.Connect(ctx, openstack.Config{Auth: a, Transport: tr})
		}
	}
	auth.Options = gophercloud.AuthOptions{IdentityEndpoint: auth.Options.IdentityEndpoint} // never the cluster's credentials
	return &Keystone{auth: auth, trusted: trusted, connect: connect, timeout: DefaultAuthTimeout}
}

// AuthURL is the Keystone's endpoint, as the cluster's credentials name it.
func (k *Keystone) AuthURL() string { return k.auth.Options.IdentityEndpoint }

// Same reports whether the auth URL raw names this Keystone (NormalizeAuthURL of both equal).
func (k *Keystone) Same(raw string) bool {
	a, ok1 := NormalizeAuthURL(raw)
	b, ok2 := NormalizeAuthURL(k.auth.Options.IdentityEndpoint)
	return ok1 && ok2 && a == b
}

// NormalizeAuthURL is raw as two auth URLs of one Keystone compare: scheme and host lower-cased, the
// scheme's default port dropped, the path without trailing slashes and without its version (/v3, /v2.0: one
// Keystone serves both); false for what is no absolute http(s) URL, or one with user information, a query or
// a fragment. Host names are not resolved: a name and its address are different Keystones.
func NormalizeAuthURL(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	for _, v := range []string{"/v3", "/v2.0"} {
		if strings.HasSuffix(path, v) {
			path = strings.TrimRight(strings.TrimSuffix(path, v), "/")
			break
		}
	}
	return scheme + "://" + host + path, true
}

// Authenticate connects with the credentials of creds (source names them in messages) to this Keystone, at
// its own endpoint with its own region, interface and TLS settings, within the Keystone's timeout. creds'
// auth URL must name this Keystone (Same), else nothing is dialed and the Refusal's reason is
// ReasonOtherKeystone. The Refusal of a failed authentication is classified as a cluster's own (connectError):
// it quotes nothing Keystone answered.
func (k *Keystone) Authenticate(ctx context.Context, creds openstack.Auth, source string) (CredentialReader, *Refusal) {
	if !k.Same(creds.Options.IdentityEndpoint) {
		return nil, &Refusal{Reason: ReasonOtherKeystone, Message: source + ": another cloud's Keystone (not the one the cluster's own credentials prove): not checked"}
	}
	a := k.auth
	a.Source = source
	a.Options = creds.Options
	a.Options.IdentityEndpoint = k.auth.Options.IdentityEndpoint
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	var tr *guardedTransport
	var rt http.RoundTripper
	if !k.trusted {
		tr = newGuardedTransport(a.TLS)
		rt = tr
	}
	conn, err := k.connect(ctx, a, rt)
	if err != nil {
		return nil, connectError(source, err, tr != nil && tr.denied.Load())
	}
	cr, ok := conn.(CredentialReader)
	if !ok {
		return nil, &Refusal{Reason: ReasonCloudUnavailable, Message: fmt.Sprintf("%s: the connection cannot tell when its credentials expire", source)}
	}
	return boundedReader{cr, k.timeout}, nil
}

// boundedReader bounds each Credential read in time.
type boundedReader struct {
	CredentialReader
	timeout time.Duration
}

func (b boundedReader) Credential(ctx context.Context) (openstack.Credential, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.CredentialReader.Credential(ctx)
}

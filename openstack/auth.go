package openstack

// Authentication sources. Each loader returns an Auth: gophercloud's AuthOptions plus what Connect
// needs besides (region, interface, TLS) and a Source that names where the settings came from, so
// that an error can say which file or variables to fix.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// Auth is everything needed to authenticate to one cloud.
type Auth struct {
	// Options are gophercloud's authentication options (AllowReauth is forced on by Connect when
	// the method can re-authenticate).
	Options gophercloud.AuthOptions
	// Region selects the catalog endpoints ("" takes the first one).
	Region string
	// Availability is the endpoint interface: public (default), internal or admin.
	Availability gophercloud.Availability
	// TLS configures the HTTPS client (nil: system roots).
	TLS *tls.Config
	// Source says where the settings came from, e.g. "clouds.yaml /etc/openstack/clouds.yaml (cloud prod)".
	Source string
}

// User names the identity that authenticates, for messages: the user name (or ID), or the
// application credential.
func (a Auth) User() string {
	o := a.Options
	switch {
	case o.ApplicationCredentialID != "":
		return "application credential " + o.ApplicationCredentialID
	case o.ApplicationCredentialName != "":
		return "application credential " + o.ApplicationCredentialName
	case o.Username != "":
		return o.Username
	case o.UserID != "":
		return "user ID " + o.UserID
	case o.TokenID != "":
		return "a token"
	}
	return "an unnamed user"
}

// Credentials are keystoneauth-style settings, as found in openrc variables and in the
// [neutron]/[keystone_authtoken] sections of Kuryr and other OpenStack services.
type Credentials struct {
	// AuthType is "password" (default) or "v3applicationcredential".
	AuthType                    string
	AuthURL                     string
	Username                    string
	UserID                      string
	Password                    string
	UserDomainName              string
	UserDomainID                string
	ProjectName                 string
	ProjectID                   string
	ProjectDomainName           string
	ProjectDomainID             string
	DomainName                  string
	DomainID                    string
	ApplicationCredentialID     string
	ApplicationCredentialName   string
	ApplicationCredentialSecret string
	Region                      string
	// Interface is public, internal or admin.
	Interface string
	// CAFile is a PEM CA bundle file that verifies Keystone's and the services' certificates instead
	// of the system roots.
	CAFile string
	// CAPEM is a PEM CA bundle given inline (a credentials Secret's cacert), used like CAFile; it is
	// never read from a file.
	CAPEM string
	// Insecure skips certificate verification (only when asked: verify: false, OS_INSECURE=true).
	Insecure bool
}

// fieldError names a missing or bad setting; the loaders turn it into their own error form.
type fieldError struct {
	field string // keystoneauth option name, e.g. "auth_url"
	msg   string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// toAuth validates c and converts it to an Auth. The returned *fieldError names the option at fault.
func (c Credentials) toAuth(source string) (Auth, *fieldError) {
	a := Auth{Source: source, Region: c.Region}
	if c.AuthURL == "" {
		return a, &fieldError{"auth_url", "missing: the Keystone URL, e.g. https://keystone.example.com:5000/v3"}
	}
	if !strings.HasPrefix(c.AuthURL, "http://") && !strings.HasPrefix(c.AuthURL, "https://") {
		return a, &fieldError{"auth_url", fmt.Sprintf("%q is not an http(s) URL", c.AuthURL)}
	}
	o := gophercloud.AuthOptions{IdentityEndpoint: c.AuthURL}
	switch strings.ToLower(c.AuthType) {
	case "", "password", "v3password":
		if c.Username == "" && c.UserID == "" {
			return a, &fieldError{"username", "missing: set username (with user_domain_name or user_domain_id) or user_id"}
		}
		if c.Password == "" {
			return a, &fieldError{"password", "missing"}
		}
		o.Username, o.UserID, o.Password = c.Username, c.UserID, c.Password
		o.DomainName = first(c.UserDomainName, c.DomainName)
		o.DomainID = first(c.UserDomainID, c.DomainID)
		if c.Username != "" && o.DomainName == "" && o.DomainID == "" {
			o.DomainID = "default"
		}
		switch {
		case c.ProjectID != "":
			o.Scope = &gophercloud.AuthScope{ProjectID: c.ProjectID}
		case c.ProjectName != "":
			s := &gophercloud.AuthScope{ProjectName: c.ProjectName,
				DomainName: first(c.ProjectDomainName, c.DomainName), DomainID: first(c.ProjectDomainID, c.DomainID)}
			if s.DomainName == "" && s.DomainID == "" {
				s.DomainID = "default"
			}
			o.Scope = s
		case c.DomainID != "" || c.DomainName != "":
			o.Scope = &gophercloud.AuthScope{DomainID: c.DomainID, DomainName: c.DomainName}
		}
	case "v3applicationcredential", "applicationcredential":
		if c.ApplicationCredentialID == "" && c.ApplicationCredentialName == "" {
			return a, &fieldError{"application_credential_id", "missing: set application_credential_id (or application_credential_name with username)"}
		}
		if c.ApplicationCredentialSecret == "" {
			return a, &fieldError{"application_credential_secret", "missing"}
		}
		if c.ApplicationCredentialID == "" && c.Username == "" && c.UserID == "" {
			return a, &fieldError{"username", "missing: application_credential_name needs username or user_id"}
		}
		o.ApplicationCredentialID = c.ApplicationCredentialID
		o.ApplicationCredentialName = c.ApplicationCredentialName
		o.ApplicationCredentialSecret = c.ApplicationCredentialSecret
		if c.ApplicationCredentialID == "" {
			o.Username, o.UserID = c.Username, c.UserID
			o.DomainName = first(c.UserDomainName, c.DomainName)
			o.DomainID = first(c.UserDomainID, c.DomainID)
		}
	default:
		return a, &fieldError{"auth_type", fmt.Sprintf("%q is not supported (expected password or v3applicationcredential)", c.AuthType)}
	}
	a.Options = o
	av, ferr := availability(c.Interface)
	if ferr != nil {
		return a, ferr
	}
	a.Availability = av
	t, ferr := tlsConfig(c.CAFile, c.CAPEM, c.Insecure)
	if ferr != nil {
		return a, ferr
	}
	a.TLS = t
	return a, nil
}

// tlsConfig is the TLS configuration of a CA bundle (a file, or PEM data given inline) and of insecure;
// nil when neither is set (the system roots). A bundle that holds no certificate is an error: trusting
// nothing would fail every request later, and a typo in a path must not be mistaken for a bad cloud.
func tlsConfig(caFile, caPEM string, insecure bool) (*tls.Config, *fieldError) {
	if caFile == "" && caPEM == "" && !insecure {
		return nil, nil
	}
	t := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // only when the user asks for it
	pem, name := []byte(caPEM), "the inline CA bundle"
	if caFile != "" {
		b, err := bounded.ReadFile(context.Background(), caFile, bounded.CertSize)
		if err != nil {
			return nil, &fieldError{"cafile", fmt.Sprintf("read CA bundle: %v", err)}
		}
		pem, name = b, caFile
	}
	if len(pem) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			field := "cacert"
			if caFile != "" {
				field = "cafile"
			}
			return nil, &fieldError{field, fmt.Sprintf("%s holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)", name)}
		}
		t.RootCAs = pool
	}
	return t, nil
}

func availability(s string) (gophercloud.Availability, *fieldError) {
	switch strings.TrimSuffix(strings.ToLower(s), "url") {
	case "", "public":
		return gophercloud.AvailabilityPublic, nil
	case "internal":
		return gophercloud.AvailabilityInternal, nil
	case "admin":
		return gophercloud.AvailabilityAdmin, nil
	}
	return "", &fieldError{"interface", fmt.Sprintf("%q is not an endpoint interface (expected public, internal or admin)", s)}
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

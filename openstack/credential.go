package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// CredentialKind says what a connection authenticates with.
type CredentialKind string

// Kinds of credential.
const (
	// CredentialApplication is a Keystone application credential (ID or name and secret): its
	// expires_at, when set, is read from Keystone.
	CredentialApplication CredentialKind = "ApplicationCredential"
	// CredentialPassword is a user's password: it expires when Keystone's password policy gives the user a
	// password_expires_at.
	CredentialPassword CredentialKind = "Password"
	// CredentialToken is a bare token: it expires with the token and cannot be renewed.
	CredentialToken CredentialKind = "Token"
)

// Credential is what a connection's credentials are and when they stop working. It never holds a
// credential's ID, name or secret: only its kind and its expiry.
type Credential struct {
	Kind CredentialKind
	// ExpiresAt is when Keystone stops accepting the credential (zero: it does not expire).
	ExpiresAt time.Time
}

// tokenBody is the part of a token's body that names how it was obtained.
type tokenBody struct {
	User struct {
		ID                string  `json:"id"`
		PasswordExpiresAt *string `json:"password_expires_at"`
	} `json:"user"`
	ApplicationCredential *struct {
		ID string `json:"id"`
	} `json:"application_credential"`
}

// Credential reads what c's credentials are and when they expire: an application credential's expires_at
// from Keystone (read once per connection: Keystone never changes it), a password's password_expires_at and
// a bare token's expiry from the current token's body. The error is classified (it quotes nothing the cloud
// said).
func (c *Cloud) Credential(ctx context.Context) (Credential, error) {
	o := c.auth.Options
	if o.ApplicationCredentialID != "" || o.ApplicationCredentialName != "" {
		return c.applicationCredential(ctx)
	}
	// Decoding a token's body costs as much as a list: once per token (a re-authentication makes a new one).
	tok := c.provider.Token()
	c.credMu.Lock()
	if c.cred != nil && c.credToken == tok {
		cr := *c.cred
		c.credMu.Unlock()
		return cr, nil
	}
	c.credMu.Unlock()
	cr, err := c.fromToken(o.TokenID != "")
	if err != nil {
		return Credential{}, err
	}
	c.credMu.Lock()
	c.cred, c.credToken = &cr, tok
	c.credMu.Unlock()
	return cr, nil
}

// fromToken reads a bare token's expiry (bare), or the password's password_expires_at, from the token's body.
func (c *Cloud) fromToken(bare bool) (Credential, error) {
	if bare {
		r, ok := c.provider.GetAuthResult().(tokens.CreateResult)
		if !ok {
			return Credential{}, fmt.Errorf("read the token's expiry: no token body")
		}
		tok, err := r.ExtractToken()
		if err != nil {
			return Credential{}, fmt.Errorf("read the token's expiry: %w", Classify(err))
		}
		return Credential{Kind: CredentialToken, ExpiresAt: tok.ExpiresAt}, nil
	}
	body, err := c.tokenBody()
	if err != nil {
		return Credential{}, fmt.Errorf("read the password's expiry: %w", err)
	}
	cr := Credential{Kind: CredentialPassword}
	if p := body.User.PasswordExpiresAt; p != nil && *p != "" {
		t, err := parseKeystoneTime(*p)
		if err != nil {
			return Credential{}, fmt.Errorf("read the password's expiry: the token's user.password_expires_at is not a time")
		}
		cr.ExpiresAt = t
	}
	return cr, nil
}

// applicationCredential reads the expiry of the application credential the current token was obtained with.
func (c *Cloud) applicationCredential(ctx context.Context) (Credential, error) {
	c.credMu.Lock()
	defer c.credMu.Unlock()
	if c.cred != nil {
		return *c.cred, nil
	}
	body, err := c.tokenBody()
	if err != nil {
		return Credential{}, fmt.Errorf("read the application credential's expiry: %w", err)
	}
	if body.ApplicationCredential == nil || body.ApplicationCredential.ID == "" || body.User.ID == "" {
		return Credential{}, fmt.Errorf("read the application credential's expiry: the token names no application credential")
	}
	ic, err := c.Client(ServiceIdentity)
	if err != nil {
		return Credential{}, fmt.Errorf("read the application credential's expiry: %w", err)
	}
	ac, err := applicationcredentials.Get(ctx, ic, body.User.ID, body.ApplicationCredential.ID).Extract()
	if err != nil {
		return Credential{}, fmt.Errorf("read the application credential's expiry from Keystone: %w", Classify(err))
	}
	cr := Credential{Kind: CredentialApplication, ExpiresAt: ac.ExpiresAt}
	c.cred = &cr
	return cr, nil
}

// tokenBody decodes the current token's user and application credential.
func (c *Cloud) tokenBody() (tokenBody, error) {
	var b tokenBody
	r, ok := c.provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return b, fmt.Errorf("no token body")
	}
	if err := r.ExtractInto(&b); err != nil {
		return b, fmt.Errorf("decode the token's body: %w", Classify(err))
	}
	return b, nil
}

// keystoneTimes are the layouts Keystone writes its times in (with or without microseconds, with or
// without a zone: Keystone's own are UTC).
var keystoneTimes = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02T15:04:05"}

func parseKeystoneTime(s string) (time.Time, error) {
	var err error
	for _, l := range keystoneTimes {
		var t time.Time
		if t, err = time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, err
}

package faultproxy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// Cloud routes a client's whole OpenStack traffic through proxies: one in front of Keystone, which rewrites the
// service catalog of token responses, and one per service origin (scheme://host:port) found in the catalog,
// created on first sight. Point gophercloud at AuthURL and every request it makes passes a proxy whose rules the
// test controls.
type Cloud struct {
	keystone       *Proxy
	keystoneOrigin string
	authURL        string
	opts           []Option

	mu      sync.Mutex
	proxies map[string]*Proxy // by real origin
	closed  bool
}

// NewCloud starts the Keystone proxy for authURL (e.g. http://127.0.0.1:5000/v3). The options apply to every
// proxy of the cloud.
func NewCloud(authURL string, opts ...Option) (*Cloud, error) {
	u, err := url.Parse(authURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cloud proxy: auth URL %q: want http(s)://host:port/v3", authURL)
	}
	origin := u.Scheme + "://" + u.Host
	ks, err := New(origin, opts...)
	if err != nil {
		return nil, err
	}
	c := &Cloud{keystone: ks, keystoneOrigin: origin, authURL: ks.URL() + u.Path, opts: opts, proxies: map[string]*Proxy{}}
	ks.setCatalogFunc(func(o string) string {
		if o == c.keystoneOrigin {
			return ks.URL()
		}
		p, err := c.Service(o)
		if err != nil {
			ks.log.Error("no proxy for catalog endpoint: left pointing at the real service", "origin", o, "err", err)
			return ""
		}
		return p.URL()
	})
	return c, nil
}

// AuthURL is the identity endpoint to give clients (the Keystone proxy, with the original path).
func (c *Cloud) AuthURL() string { return c.authURL }

// Keystone returns the proxy in front of Keystone.
func (c *Cloud) Keystone() *Proxy { return c.keystone }

// Service returns the proxy for a service's real origin (e.g. "http://127.0.0.1:9696" for Neutron), starting
// it if needed, so that a test can add rules before the client first authenticates.
func (c *Cloud) Service(origin string) (*Proxy, error) {
	origin = strings.TrimSuffix(origin, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("cloud proxy closed")
	}
	if p, ok := c.proxies[origin]; ok {
		return p, nil
	}
	p, err := New(origin, c.opts...)
	if err != nil {
		return nil, err
	}
	c.proxies[origin] = p
	return p, nil
}

// Close stops every proxy of the cloud.
func (c *Cloud) Close() error {
	c.mu.Lock()
	c.closed = true
	ps := make([]*Proxy, 0, len(c.proxies))
	for _, p := range c.proxies {
		ps = append(ps, p)
	}
	c.mu.Unlock()
	errs := []error{c.keystone.Close()}
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

package faultproxy

import (
	"fmt"

	"k8s.io/client-go/rest"
)

// NewKube starts a proxy in front of the kube-apiserver that cfg points at, and returns it with a copy of cfg
// that talks to the proxy (plain HTTP on 127.0.0.1, same credentials). The proxy trusts the apiserver with
// cfg's TLS settings.
func NewKube(cfg *rest.Config, opts ...Option) (*Proxy, *rest.Config, error) {
	rt, err := rest.TransportFor(&rest.Config{Host: cfg.Host, TLSClientConfig: cfg.TLSClientConfig})
	if err != nil {
		return nil, nil, fmt.Errorf("transport to kube-apiserver %s: %w", cfg.Host, err)
	}
	p, err := New(cfg.Host, append([]Option{WithTransport(rt)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	out := rest.CopyConfig(cfg)
	out.Host = p.URL()
	out.TLSClientConfig = rest.TLSClientConfig{}
	return p, out, nil
}

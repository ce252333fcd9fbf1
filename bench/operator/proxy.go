package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/clientcmd"
)

// countingProxy forwards TCP connections to the kube-apiserver as they are (TLS end to end) and counts the
// bytes the apiserver sends: everything one replica receives from it, TLS records included.
type countingProxy struct {
	l     net.Listener
	bytes atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startCountingProxy(upstream string) (*countingProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{l: l}
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(up, down); _ = up.Close() }()
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(countingWriter{down, &p.bytes}, up)
				_ = down.Close()
			}()
		}
	}()
	return p, nil
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// received is the bytes the apiserver sent through p so far (0 without a proxy).
func (p *countingProxy) received() int64 {
	if p == nil {
		return 0
	}
	return p.bytes.Load()
}

func (p *countingProxy) close() {
	if p == nil {
		return
	}
	_ = p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// proxiedKubeconfig starts a counting proxy to the server of kubeconfig and writes a copy of kubeconfig,
// pointing at the proxy, to path (the apiserver's certificate names 127.0.0.1, which the proxy also is),
// acting as the operator's ServiceAccount in asOperatorIn unless that is empty.
func proxiedKubeconfig(kubeconfig, path, asOperatorIn string) (*countingProxy, string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	if asOperatorIn != "" {
		impersonate(cfg, asOperatorIn)
	}
	var p *countingProxy
	for _, cl := range cfg.Clusters {
		u, err := url.Parse(cl.Server)
		if err != nil {
			return nil, "", fmt.Errorf("kubeconfig %s: server %q: %w", kubeconfig, cl.Server, err)
		}
		if p == nil {
			if p, err = startCountingProxy(u.Host); err != nil {
				return nil, "", err
			}
		}
		u.Host = p.l.Addr().String()
		cl.Server = u.String()
	}
	if p == nil {
		return nil, "", fmt.Errorf("kubeconfig %s names no cluster", kubeconfig)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		p.close()
		return nil, "", err
	}
	return p, path, nil
}

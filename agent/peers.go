package agent

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/vitalsproject/vitals/netprobe"
)

// PeerPortName is the name of the canary's port in its Service (and so in its EndpointSlices); a
// slice with one TCP port is read without a name.
const PeerPortName = "probe"

// Peer is a canary on another node, as its Service's EndpointSlices list it.
type Peer struct {
	Addr netip.AddrPort
	Node string
}

// PeerIndex keeps the canaries that the EndpointSlices of one headless Service list (an informer on
// the label kubernetes.io/service-name of the Service's namespace: the slices of one Service, nothing
// else). Each slice is stripped before it is stored to its port and, per endpoint, the first address,
// the node and the ready and terminating conditions: an agent keeps a few dozen bytes per node of the
// cluster.
type PeerIndex struct {
	store cache.Store
	ctrl  cache.Controller
	node  string

	mu      sync.Mutex
	lastErr error // of the last list or watch, nil after a success
}

// NewPeerIndex builds the index of the canaries of service (namespace/name) for the agent of node;
// Run fills it.
func NewPeerIndex(k *Kube, namespace, service, node string) *PeerIndex {
	p := &PeerIndex{node: node}
	sel := discoveryv1.LabelServiceName + "=" + service
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = sel
			l, err := k.ListEndpointSlices(ctx, namespace, opts)
			p.record(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = sel
			w, err := k.WatchEndpointSlices(ctx, namespace, opts)
			p.record(err)
			return w, err
		},
	}
	p.store, p.ctrl = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &discoveryv1.EndpointSlice{},
		Handler:       cache.ResourceEventHandlerFuncs{},
		Transform:     stripEndpointSlice,
	})
	return p
}

func (p *PeerIndex) record(err error) {
	p.mu.Lock()
	p.lastErr = err
	p.mu.Unlock()
}

// Run keeps the index until ctx is done. Failed lists and watches are retried by client-go's
// reflector, with a jittered exponential backoff.
func (p *PeerIndex) Run(ctx context.Context) { p.ctrl.RunWithContext(ctx) }

// HasSynced is true once the first list has completed.
func (p *PeerIndex) HasSynced() bool { return p.ctrl.HasSynced() }

// Err says, in fixed words, why the slices cannot be read (nil once a list or watch succeeded).
func (p *PeerIndex) Err() error {
	p.mu.Lock()
	err := p.lastErr
	p.mu.Unlock()
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return errors.New("forbidden (the agent's role lacks list and watch of endpointslices)")
	case apierrors.IsUnauthorized(err):
		return errors.New("unauthorized")
	}
	return netprobe.Failed
}

// Peers returns the ready canaries on other nodes, by address: an endpoint that is not ready (its pod
// is not, or its node was found NotReady and its pods marked so), terminating, on this node, at
// self (this node's canary), or without an address or port is left out. A nil ready condition is
// ready, as the API defines it (and kube-proxy reads it).
func (p *PeerIndex) Peers(self netip.Addr) []Peer {
	var out []Peer
	for _, obj := range p.store.List() {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || (s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6) {
			continue
		}
		port, ok := slicePort(s)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) ||
				(ep.Conditions.Terminating != nil && *ep.Conditions.Terminating) {
				continue
			}
			if ep.NodeName != nil && *ep.NodeName == p.node {
				continue
			}
			a, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || a == self {
				continue
			}
			node := ""
			if ep.NodeName != nil {
				node = *ep.NodeName
			}
			out = append(out, Peer{Addr: netip.AddrPortFrom(a.Unmap(), port), Node: node})
		}
	}
	slices.SortFunc(out, func(a, b Peer) int { return a.Addr.Compare(b.Addr) })
	return slices.CompactFunc(out, func(a, b Peer) bool { return a.Addr == b.Addr })
}

// slicePort is the slice's port named PeerPortName, else its only TCP port.
func slicePort(s *discoveryv1.EndpointSlice) (uint16, bool) {
	var only []uint16
	for _, p := range s.Ports {
		if p.Port == nil || *p.Port <= 0 || *p.Port > 65535 || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
			continue
		}
		if p.Name != nil && *p.Name == PeerPortName {
			return uint16(*p.Port), true
		}
		only = append(only, uint16(*p.Port))
	}
	if len(only) == 1 {
		return only[0], true
	}
	return 0, false
}

// stripEndpointSlice keeps what Peers reads: the address type, the TCP ports and, per endpoint, its
// first address, node and ready and terminating conditions.
func stripEndpointSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil // a tombstone (cache.DeletedFinalStateUnknown)
	}
	out := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion},
		AddressType: s.AddressType,
		Ports:       make([]discoveryv1.EndpointPort, 0, len(s.Ports)),
		Endpoints:   make([]discoveryv1.Endpoint, 0, len(s.Endpoints)),
	}
	for _, p := range s.Ports {
		out.Ports = append(out.Ports, discoveryv1.EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: p.Port})
	}
	for _, ep := range s.Endpoints {
		e := discoveryv1.Endpoint{NodeName: ep.NodeName, Conditions: discoveryv1.EndpointConditions{
			Ready: ep.Conditions.Ready, Terminating: ep.Conditions.Terminating}}
		if len(ep.Addresses) > 0 {
			e.Addresses = ep.Addresses[:1:1]
		}
		out.Endpoints = append(out.Endpoints, e)
	}
	return out, nil
}

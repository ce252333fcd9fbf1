package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	kubecheck "github.com/vitalsproject/vitals/health/checks/kubernetes"
)

// Kube is the agent's client of the Kubernetes API: core/v1 Nodes, Events and Pods, discovery/v1
// EndpointSlices (the connectivity check's peers), and the API server's /readyz, over client-go's REST
// client. It is not client-go's clientset, whose scheme
// registers every API group when the process starts: the agent runs on every node, and that
// registration alone cost it several MiB of resident memory (docs/benchmarks.md).
type Kube struct {
	core      rest.Interface
	discovery rest.Interface
	readyz    rest.Interface
	params    runtime.ParameterCodec
	scheme    *runtime.Scheme
}

// kubeRequestTimeout bounds each request the agent makes outside a watch.
const kubeRequestTimeout = 10 * time.Second

// NewKube builds the client from a client configuration.
func NewKube(cfg *rest.Config) (*Kube, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register core/v1 types: %w", err)
	}
	if err := discoveryv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register discovery/v1 types: %w", err)
	}
	metav1.AddToGroupVersion(scheme, corev1.SchemeGroupVersion)
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	c := rest.CopyConfig(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.NegotiatedSerializer = codecs
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	core, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("build Kubernetes client for %s: %w", cfg.Host, err)
	}
	dc := rest.CopyConfig(c)
	dc.APIPath = "/apis"
	dc.GroupVersion = &discoveryv1.SchemeGroupVersion
	// The same HTTP client: one connection to the API server for every request of the agent.
	discovery, err := rest.RESTClientForConfigAndClient(dc, core.Client)
	if err != nil {
		return nil, fmt.Errorf("build Kubernetes discovery/v1 client for %s: %w", cfg.Host, err)
	}
	readyz, err := kubecheck.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &Kube{core: core, discovery: discovery, readyz: readyz, params: runtime.NewParameterCodec(scheme), scheme: scheme}, nil
}

// Scheme knows the core/v1 types (for the event recorder).
func (k *Kube) Scheme() *runtime.Scheme { return k.scheme }

// REST is the plain client for the API server's own paths (/readyz).
func (k *Kube) REST() rest.Interface { return k.readyz }

// GetNode reads a Node.
func (k *Kube) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	var n corev1.Node
	err := k.core.Get().Resource("nodes").Name(name).Timeout(kubeRequestTimeout).Do(ctx).Into(&n)
	return &n, err
}

// PatchNodeStatus applies a strategic merge patch to a Node's status.
func (k *Kube) PatchNodeStatus(ctx context.Context, name string, patch []byte) error {
	return k.core.Patch(types.StrategicMergePatchType).Resource("nodes").Name(name).SubResource("status").
		Timeout(kubeRequestTimeout).Body(patch).Do(ctx).Error()
}

// ListEvents lists core/v1 Events of every namespace.
func (k *Kube) ListEvents(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	var l corev1.EventList
	err := k.core.Get().Resource("events").VersionedParams(&opts, k.params).Timeout(kubeRequestTimeout).Do(ctx).Into(&l)
	return &l, err
}

// WatchEvents watches core/v1 Events of every namespace.
func (k *Kube) WatchEvents(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return k.core.Get().Resource("events").VersionedParams(&opts, k.params).Watch(ctx)
}

// ListPods lists Pods of every namespace.
func (k *Kube) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	var l corev1.PodList
	err := k.core.Get().Resource("pods").VersionedParams(&opts, k.params).Timeout(kubeRequestTimeout).Do(ctx).Into(&l)
	return &l, err
}

// WatchPods watches Pods of every namespace.
func (k *Kube) WatchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return k.core.Get().Resource("pods").VersionedParams(&opts, k.params).Watch(ctx)
}

// ListEndpointSlices lists the EndpointSlices of a namespace.
func (k *Kube) ListEndpointSlices(ctx context.Context, namespace string, opts metav1.ListOptions) (*discoveryv1.EndpointSliceList, error) {
	var l discoveryv1.EndpointSliceList
	err := k.discovery.Get().Namespace(namespace).Resource("endpointslices").VersionedParams(&opts, k.params).
		Timeout(kubeRequestTimeout).Do(ctx).Into(&l)
	return &l, err
}

// WatchEndpointSlices watches the EndpointSlices of a namespace.
func (k *Kube) WatchEndpointSlices(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return k.discovery.Get().Namespace(namespace).Resource("endpointslices").VersionedParams(&opts, k.params).Watch(ctx)
}

// eventSink writes the event recorder's Events (record.EventSink).
type eventSink struct{ k *Kube }

func (s eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubeRequestTimeout)
	defer cancel()
	var out corev1.Event
	err := s.k.core.Post().Namespace(e.Namespace).Resource("events").Body(e).Do(ctx).Into(&out)
	return &out, err
}

func (s eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubeRequestTimeout)
	defer cancel()
	var out corev1.Event
	err := s.k.core.Put().Namespace(e.Namespace).Resource("events").Name(e.Name).Body(e).Do(ctx).Into(&out)
	return &out, err
}

func (s eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubeRequestTimeout)
	defer cancel()
	var out corev1.Event
	err := s.k.core.Patch(types.StrategicMergePatchType).Namespace(e.Namespace).Resource("events").Name(e.Name).
		Body(data).Do(ctx).Into(&out)
	return &out, err
}

package workload

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Cluster is the operator's access to one workload cluster.
type Cluster interface {
	// Reader reads through the cluster's informer cache. The informer of a kind starts on its first read
	// and the read waits for it to sync (bounded by the context, else by the request timeout).
	Reader() client.Reader
	// Client writes to the workload cluster and reads uncached. Every write is sent through the fence of
	// its context (fencing.Enter): without one, or refused by it, nothing is sent.
	Client() client.Client
	// Teardown is Client with a rate limit of its own (Limits.TeardownQPS and TeardownBurst), made on its first
	// use, for the deletes of a cluster being torn down: the same connections, fences and limits of size and
	// time, another token bucket.
	Teardown() (client.Client, error)
	// Healthy is nil when the API answered the last probe and every informer started so far has synced;
	// else an *Error whose Reason says why.
	Healthy() error
	// Source says where the kubeconfig came from ("secret NS/NAME key KEY" or "the operator's own
	// cluster"); it never holds the kubeconfig's contents.
	Source() string
	// Done is closed once the access has stopped (the VitalsCluster is gone, its kubeconfig changed, or
	// the operator stops); a holder must then ask For again.
	Done() <-chan struct{}
}

// Access gives each VitalsCluster its workload Cluster.
type Access interface {
	// For returns the workload cluster of c, connecting on first use and again when the kubeconfig
	// Secret changes (uid or resourceVersion). A refused or unreadable kubeconfig is an *Error, and stops
	// the access the cluster had.
	For(ctx context.Context, c *v1alpha1.VitalsCluster) (Cluster, error)
	// Forget stops and drops the access of a VitalsCluster that is gone; it returns once every goroutine
	// of that access has ended.
	Forget(key types.NamespacedName)
}

package workload

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Cluster is the operator's access to one workload cluster.
type Cluster interface {
	// Reader reads through the cluster's informer cache (informers are started on first use of a kind).
	Reader() client.Reader
	// Client writes to the workload cluster (and reads uncached).
	Client() client.Client
	// Healthy is nil when the API answers and every informer started so far has synced.
	Healthy() error
}

// Access gives each VitalsCluster its workload Cluster.
type Access interface {
	// For returns the workload cluster of c, connecting on first use and again when the kubeconfig
	// Secret changes.
	For(ctx context.Context, c *v1alpha1.VitalsCluster) (Cluster, error)
	// Forget stops and drops the access of a VitalsCluster that is gone.
	Forget(key types.NamespacedName)
}

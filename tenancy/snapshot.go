package tenancy

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// clusterSnapshot is the cluster-wide list of VitalsClusters the overlap rule reads, kept for a while and
// shared by every resolution: one list in flight at a time (the others wait for it), and each cluster kept
// with only what CheckOverlap reads (its identity, creation, spec and proven project).
type clusterSnapshot struct {
	mu    sync.Mutex
	at    time.Time
	items []v1alpha1.VitalsCluster
}

// get returns the snapshot when it is younger than maxAge, else lists every VitalsCluster of r completely
// (in pages of ClustersPage; a failed page fails the list and keeps nothing: a partial list is never taken
// for the whole).
func (s *clusterSnapshot) get(ctx context.Context, r client.Reader, now func() time.Time, maxAge time.Duration) ([]v1alpha1.VitalsCluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items != nil && maxAge > 0 && now().Sub(s.at) < maxAge {
		return s.items, nil
	}
	start := now()
	out := []v1alpha1.VitalsCluster{}
	cont := ""
	for {
		var list v1alpha1.VitalsClusterList
		if err := r.List(ctx, &list, client.Limit(ClustersPage), client.Continue(cont)); err != nil {
			s.items = nil
			return nil, err
		}
		for i := range list.Items {
			out = append(out, overlapView(&list.Items[i]))
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	s.items, s.at = out, start
	return out, nil
}

// overlapView is c with only what the overlap rule reads.
func overlapView(c *v1alpha1.VitalsCluster) v1alpha1.VitalsCluster {
	return v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, UID: c.UID, CreationTimestamp: c.CreationTimestamp},
		Spec:       *c.Spec.DeepCopy(),
		Status:     v1alpha1.ClusterStatus{ProjectID: c.Status.ProjectID},
	}
}

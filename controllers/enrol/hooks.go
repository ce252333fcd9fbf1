// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package enrol

import (
	"context"
	"fmt"
	"maps"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/clusterapi"
)

// hookMachines puts clusterapi.MachineDeletionHook on every Machine of cl (hold), or takes it off those that carry
// it (not hold). The Machines are listed from the API server (no Machine informer); each write is a patch of the
// annotation alone, fenced by the Cluster: the hook goes on only while the Cluster is still being torn down, and
// comes off whenever the Cluster is still there (a Cluster gone takes its Machines with it). It returns how many
// Machines it changed.
func (r *Reconciler) hookMachines(ctx context.Context, cl *clusterv1.Cluster, hold bool) (int, error) {
	var list clusterv1.MachineList
	if err := r.d.APIReader.List(ctx, &list, client.InNamespace(cl.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cl.Name}); err != nil {
		return 0, fmt.Errorf("list the Machines of Cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	check := stillGoing
	if !hold {
		check = nil
	}
	changed := 0
	for i := range list.Items {
		m := &list.Items[i]
		if m.Spec.ClusterName != cl.Name {
			continue
		}
		_, has := m.Annotations[clusterapi.MachineDeletionHook]
		if has == hold {
			continue
		}
		before := m.DeepCopy()
		ann := maps.Clone(m.Annotations)
		if ann == nil {
			ann = map[string]string{}
		}
		if hold {
			ann[clusterapi.MachineDeletionHook] = clusterapi.MachineDeletionHookOwner
		} else {
			delete(ann, clusterapi.MachineDeletionHook)
		}
		m.Annotations = ann
		if err := r.d.Client.Patch(r.fenced(ctx, cl, check), m, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return changed, fmt.Errorf("set the deletion hook of Machine %s/%s to %v: %w", m.Namespace, m.Name, hold, err)
		}
		changed++
	}
	if changed > 0 {
		logf.FromContext(ctx).Info("machines' deletion hook", "hold", hold, "machines", changed)
	}
	return changed, nil
}

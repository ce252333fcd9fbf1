// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package deorbit

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// NeighbourGuard is the sweep's guard (Input.SweepGuard) of the operator and of `vitals deorbit` alike: it refuses
// the sweep's deletes while a VitalsCluster other than self (by UID; "" in the command: none is its own) names the
// same cloud cluster in project, since its volumes and load balancers carry the same tags. Without it, a
// VitalsCluster created and deleted with another's clusterName, or the command run with it, would sweep the other's
// resources. A neighbour being deleted counts as present until its own teardown is proven (teardownProven): one held
// NotConfirmed, or Orphan, keeps what it has; one whose project is not known yet counts too.
//
// api lists the VitalsClusters of namespace ("": every namespace) from the API server, page by page: with sharding
// the operator's cache holds one replica's shard ranges only, and the neighbour may be another replica's. A list that
// fails is an error, and the engine's sweep then deletes nothing (fail closed).
func NeighbourGuard(api client.Reader, namespace string, self types.UID, project, cluster string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		var others []string
		opts := []client.ListOption{client.Limit(guardPage)}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		for cont := ""; ; {
			var list v1alpha1.VitalsClusterList
			if err := api.List(ctx, &list, append(opts, client.Continue(cont))...); err != nil {
				return "", fmt.Errorf("list VitalsClusters to guard the sweep of cloud cluster %q: %w", cluster, err)
			}
			for i := range list.Items {
				o := &list.Items[i]
				if (self != "" && o.UID == self) || ClusterName(o) != cluster || teardownProven(o) {
					continue
				}
				if o.Status.ProjectID == project || o.Status.ProjectID == "" {
					others = append(others, o.Namespace+"/"+o.Name)
				}
			}
			if cont = list.Continue; cont == "" {
				break
			}
		}
		if len(others) == 0 {
			return "", nil
		}
		sort.Strings(others)
		return fmt.Sprintf("VitalsCluster %s names the same cloud cluster %q in this project: the sweep deletes nothing", strings.Join(others, ", "), cluster), nil
	}
}

// teardownProven reports whether o is being deleted and its own teardown runs: deletionPolicy Deorbit, its
// interlock held at a step (status.deorbit.interlock) and the teardown started, and not held NotConfirmed since.
// Only then is what carries its cluster name going anyway.
func teardownProven(o *v1alpha1.VitalsCluster) bool {
	if o.DeletionTimestamp.IsZero() || o.Spec.Deletion() != v1alpha1.DeletionPolicyDeorbit {
		return false
	}
	d := o.Status.Deorbit
	if d == nil || d.StartTime == nil || d.Interlock == "" {
		return false
	}
	cd := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionCleanedUp)
	return cd == nil || cd.Reason != ReasonNotConfirmed
}

// guardPage is the most VitalsClusters one page of the sweep guard's list holds.
const guardPage = 500

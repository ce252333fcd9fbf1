// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package deorbit

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/pass"
)

// onOwner puts deorbit's CleanedUp condition, as cd, on the Cluster API Cluster that controls c, as the condition
// clusterapi.ConditionCleanedUp (what `clusterctl describe cluster --show-conditions all` and `kubectl describe
// cluster` show): the debris report outlives the VitalsCluster there, while the Cluster waits for its own
// teardown. It is written by server-side apply of that one condition (field manager vitals-deorbit, the list
// is a map by type), so Cluster API's conditions are never touched, with the Cluster's UID in the object: a
// Cluster of the same name but another UID is refused by the API server. Nothing is written when the condition
// is already so, or when there is no such Cluster (gone, moved, not Cluster API's). A failure is logged, not
// returned: the report is on the VitalsCluster and in the Events as well.
func (r *Reconciler) onOwner(ctx context.Context, c *v1alpha1.VitalsCluster, cd metav1.Condition) {
	ref, ok := clusterapi.OwnerOf(c)
	if !ok {
		return
	}
	log := logf.FromContext(ctx)
	key := client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}
	cd.Type = clusterapi.ConditionCleanedUp
	cd.LastTransitionTime = metav1.NewTime(r.d.Clock.Now())
	wrote, err := clusterapi.ApplyCondition(r.d.Fenced(ctx, c), r.d.APIReader, r.d.Client, key, ref.UID, cd, pass.FieldManager(Name))
	if err != nil {
		log.Error(err, "cannot put the cleanup's condition on the owner Cluster", "ownerCluster", key.String(), "reason", cd.Reason)
		return
	}
	if !wrote {
		return
	}
	log.V(1).Info("cleanup condition on the owner cluster", "ownerCluster", key.String(), "reason", cd.Reason, "status", string(cd.Status))
}

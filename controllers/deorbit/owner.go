// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package deorbit

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/pass"
)

// maxOwnerMessage bounds the message of the condition on the Cluster API Cluster (its CRD allows 10240).
const maxOwnerMessage = 10240

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
	var cl clusterv1.Cluster
	switch err := r.d.APIReader.Get(ctx, key, &cl); {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err), runtime.IsNotRegisteredError(err):
		return
	case err != nil:
		log.Error(err, "cannot read the owner Cluster for its condition", "ownerCluster", key.String())
		return
	case cl.UID != ref.UID:
		return
	}
	cd.Type = clusterapi.ConditionCleanedUp
	cd.ObservedGeneration = cl.Generation
	if len(cd.Message) > maxOwnerMessage {
		cd.Message = cd.Message[:maxOwnerMessage]
	}
	cd.LastTransitionTime = metav1.NewTime(r.d.Clock.Now())
	if old := meta.FindStatusCondition(cl.Status.Conditions, cd.Type); old != nil {
		if old.Status == cd.Status && old.Reason == cd.Reason && old.Message == cd.Message && old.ObservedGeneration == cd.ObservedGeneration {
			return
		}
		if old.Status == cd.Status {
			cd.LastTransitionTime = old.LastTransitionTime
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1.GroupVersion.String(),
		"kind":       clusterapi.ClusterKind,
		"metadata":   map[string]any{"namespace": cl.Namespace, "name": cl.Name, "uid": string(cl.UID)},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": cd.Type, "status": string(cd.Status), "reason": cd.Reason, "message": cd.Message,
			"observedGeneration": cd.ObservedGeneration, "lastTransitionTime": cd.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"),
		}}},
	}}
	err := r.d.Client.Status().Apply(r.d.Fenced(ctx, c), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(pass.FieldManager(Name)), client.ForceOwnership)
	if err != nil && !apierrors.IsNotFound(err) {
		log.Error(err, "cannot put the cleanup's condition on the owner Cluster", "ownerCluster", key.String(), "reason", cd.Reason)
		return
	}
	log.V(1).Info("cleanup condition on the owner cluster", "ownerCluster", key.String(), "reason", cd.Reason, "status", string(cd.Status))
}

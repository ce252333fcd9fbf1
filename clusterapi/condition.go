// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxConditionMessage bounds the message of a condition Vitals puts on a Cluster (its CRD allows 10240).
const MaxConditionMessage = 10240

// ApplyCondition puts cd on the Cluster key of uid by server-side apply of that one condition, field manager
// fieldOwner: the conditions are a list mapped by type, so Cluster API's own are never touched, and the object
// carries the Cluster's UID, so that another Cluster of the name is refused by the API server. The Cluster is read
// from rd (the API server, not a cache) first, and nothing is written when it is gone, is another Cluster of the
// name, or Cluster API is not installed, or when the condition is already so (status, reason, message and
// observed generation); cd's LastTransitionTime is kept from the condition there while its status stays. Its
// ObservedGeneration is the Cluster's and its message is cut at MaxConditionMessage. ctx carries the caller's
// fence for the write. It reports whether it wrote; a Cluster gone at the write is not an error.
func ApplyCondition(ctx context.Context, rd client.Reader, w client.Client, key client.ObjectKey, uid types.UID, cd metav1.Condition, fieldOwner string) (bool, error) {
	var cl clusterv1.Cluster
	switch err := rd.Get(ctx, key, &cl); {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err), runtime.IsNotRegisteredError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the Cluster %s for its condition %s: %w", key, cd.Type, err)
	case cl.UID != uid:
		return false, nil
	}
	cd.ObservedGeneration = cl.Generation
	if len(cd.Message) > MaxConditionMessage {
		cd.Message = cd.Message[:MaxConditionMessage]
	}
	if old := meta.FindStatusCondition(cl.Status.Conditions, cd.Type); old != nil {
		if old.Status == cd.Status && old.Reason == cd.Reason && old.Message == cd.Message && old.ObservedGeneration == cd.ObservedGeneration {
			return false, nil
		}
		if old.Status == cd.Status {
			cd.LastTransitionTime = old.LastTransitionTime
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1.GroupVersion.String(),
		"kind":       ClusterKind,
		"metadata":   map[string]any{"namespace": cl.Namespace, "name": cl.Name, "uid": string(cl.UID)},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": cd.Type, "status": string(cd.Status), "reason": cd.Reason, "message": cd.Message,
			"observedGeneration": cd.ObservedGeneration, "lastTransitionTime": cd.LastTransitionTime.UTC().Format(time.RFC3339),
		}}},
	}}
	err := w.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldOwner), client.ForceOwnership)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("apply the condition %s (%s) to the Cluster %s: %w", cd.Type, cd.Reason, key, err)
	}
	return true, nil
}

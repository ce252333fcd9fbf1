// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package enrol

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
)

// healthChanged passes the VitalsCluster updates that change the health the enrolment puts on its Cluster.
var healthChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.VitalsCluster)
		n, ok2 := e.ObjectNew.(*v1alpha1.VitalsCluster)
		return !ok1 || !ok2 || clusterapi.Health(o) != clusterapi.Health(n)
	},
}

// health puts clusterapi.ConditionHealthy, the health of vcl, on cl, or takes it off when vcl is nil (the
// Cluster not or no longer enrolled, or torn down). The cached cl decides whether anything is to be done; the
// write (clusterapi.SetCondition) reads the Cluster again and is fenced (not while the Cluster is paused).
func (r *Reconciler) health(ctx context.Context, cl *clusterv1.Cluster, vcl *v1alpha1.VitalsCluster) error {
	old := meta.FindStatusCondition(cl.Status.Conditions, clusterapi.ConditionHealthy)
	onV1 := slices.ContainsFunc(cl.GetV1Beta1Conditions(), func(c clusterv1.Condition) bool { return c.Type == clusterapi.ConditionHealthy })
	var cd *metav1.Condition
	if vcl != nil {
		h := clusterapi.Health(vcl)
		cd = &h
		if old != nil && onV1 && old.Status == h.Status && old.Reason == h.Reason && old.Message == h.Message && old.ObservedGeneration == cl.Generation {
			return nil
		}
	} else if old == nil && !onV1 {
		return nil
	}
	wrote, err := clusterapi.SetCondition(r.fenced(ctx, cl, notPaused), r.d.APIReader, r.d.Client, client.ObjectKeyFromObject(cl), cl.UID, cd, metav1.NewTime(r.d.Clock.Now()))
	if err != nil {
		return fmt.Errorf("health condition of Cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	if wrote {
		log := logf.FromContext(ctx)
		if cd == nil {
			log.V(1).Info("health condition taken off the cluster", "condition", clusterapi.ConditionHealthy)
		} else {
			log.V(1).Info("health condition on the cluster", "condition", clusterapi.ConditionHealthy, "status", string(cd.Status), "reason", cd.Reason)
		}
	}
	return nil
}

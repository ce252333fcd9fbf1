// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package enrol

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/fencing"
)

// check is what a write's fence re-checks on the Cluster as the API server has it at the write (nil: only that
// it is still the same Cluster).
type check func(live *clusterv1.Cluster) *fencing.Error

// notPaused refuses a write while Cluster API pauses the Cluster.
func notPaused(live *clusterv1.Cluster) *fencing.Error {
	if clusterapi.Paused(live, live) {
		return &fencing.Error{Reason: fencing.ReasonPaused, Message: "Cluster " + live.Namespace + "/" + live.Name + " is paused (cluster.x-k8s.io/paused or spec.paused)"}
	}
	return nil
}

// stillGoing refuses a deletion unless the Cluster is still being torn down (not paused, not moved).
func stillGoing(live *clusterv1.Cluster) *fencing.Error {
	if going, why := clusterapi.Teardown(live, nil); !going {
		return &fencing.Error{Reason: fencing.ReasonInterlock, Message: why}
	}
	return nil
}

// notGoing refuses to release a Machine's deletion hook once the Cluster is being deleted: the Machine's
// deletion may then be the Cluster's, which holds every Machine until deorbit is through.
func notGoing(live *clusterv1.Cluster) *fencing.Error {
	if !live.DeletionTimestamp.IsZero() {
		return &fencing.Error{Reason: fencing.ReasonInterlock, Message: "Cluster " + live.Namespace + "/" + live.Name + " is being deleted: its Machines stay held"}
	}
	return nil
}

// fenced is ctx carrying the fence of one write for cl: cl read again from the API server (gone, or another
// Cluster of its name: ClusterGone; unreadable: Unverified), then more, then the replica's validity for cl's
// UID (d.Fencer; without one, the write timeout).
func (r *Reconciler) fenced(ctx context.Context, cl *clusterv1.Cluster, more check) context.Context {
	key, uid := client.ObjectKeyFromObject(cl), cl.UID
	return fencing.With(ctx, fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		var live clusterv1.Cluster
		err := r.d.APIReader.Get(ctx, key, &live)
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil, &fencing.Error{Reason: fencing.ReasonClusterGone, Message: "Cluster " + key.String() + " is gone"}
		case err != nil:
			return nil, nil, &fencing.Error{Reason: fencing.ReasonUnverified, Message: "read Cluster " + key.String() + ": " + err.Error()}
		case live.UID != uid:
			return nil, nil, &fencing.Error{Reason: fencing.ReasonClusterGone, Message: "Cluster " + key.String() + " is another Cluster now (uid " + string(live.UID) + ")"}
		}
		if more != nil {
			if ferr := more(&live); ferr != nil {
				return nil, nil, ferr
			}
		}
		if r.d.Fencer == nil {
			wctx, cancel := context.WithTimeout(ctx, fencing.DefaultWriteTimeout)
			return wctx, cancel, nil
		}
		// the replica's validity for the Cluster's UID: its shard range (or leadership) decides who enrols it
		return r.d.Fencer.StatusFence(&v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: uid}}).Enter(ctx)
	}))
}

// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package enrol

import (
	"context"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
)

// machineList is an empty list of Machines' metadata: the enrolment reads no more of a Machine than its labels,
// annotations and deletion (its cache holds no more).
func machineList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("MachineList"))
	return l
}

// hooks counts what hookMachines changed.
type hooks struct{ held, released int }

// hookMachines makes the deletion hook (clusterapi.MachineDeletionHook) of every Machine of cl what it must be,
// so that no Machine's server goes while deorbit may still need it:
//   - While vcl (nil: none) holds Machines (clusterapi.HoldMachines), every Machine carries the hook from the
//     moment it is seen, and not only once a teardown has begun: Cluster API deletes a Cluster's Machines as
//     soon as the Cluster is deleted, and a hook put on after that would race the Machines' deletion (a Machine
//     whose infrastructure is already gone, or a replica stopped for a minute, loses it).
//   - A Machine deleted while its Cluster lives (a scale-down, a rollout, a MachineHealthCheck's replacement) is
//     released: its hook comes off, fenced by the Cluster read again from the API server and not torn down.
//   - In a teardown (teardown true: cl is being deleted, and not by a move) every Machine is held, deleting or
//     not, fenced by the Cluster still being torn down; and every hook comes off once vcl no longer holds.
//
// In a teardown the Machines are listed from the API server (none is missed for the cache's lag); otherwise from
// the cache. Each write is a merge patch of the annotations alone, fenced by the Cluster (same UID).
func (r *Reconciler) hookMachines(ctx context.Context, cl *clusterv1.Cluster, vcl *v1alpha1.VitalsCluster, teardown bool) (hooks, error) {
	var done hooks
	list := machineList()
	rd := client.Reader(r.d.Client)
	if teardown {
		rd = r.d.APIReader
	}
	if err := rd.List(ctx, list, client.InNamespace(cl.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cl.Name}); err != nil {
		return done, fmt.Errorf("list the Machines of Cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	holds := clusterapi.HoldMachines(vcl)
	for i := range list.Items {
		m := &list.Items[i]
		deleting := !m.DeletionTimestamp.IsZero()
		hold := holds && (teardown || !deleting)
		if _, has := m.Annotations[clusterapi.MachineDeletionHook]; has == hold {
			continue
		}
		var check check
		switch {
		case hold && teardown:
			check = stillGoing
		case !hold && holds:
			check = notGoing // a Machine deleted while its Cluster lives
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
			return done, fmt.Errorf("set the deletion hook of Machine %s/%s to %v: %w", m.Namespace, m.Name, hold, err)
		}
		if hold {
			done.held++
		} else {
			done.released++
		}
		logf.FromContext(ctx).V(1).Info("machine's deletion hook", "machine", m.Name, "hold", hold, "deleting", deleting)
	}
	return done, nil
}

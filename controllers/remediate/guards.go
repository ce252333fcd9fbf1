// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

// capiCluster reads the Cluster API Cluster of m (its spec.clusterName, in its namespace) from the API server.
func (r *Reconciler) capiCluster(ctx context.Context, m *clusterv1.Machine) (*clusterv1.Cluster, error) {
	var cl clusterv1.Cluster
	if err := r.d.APIReader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, &cl); err != nil {
		return nil, fmt.Errorf("read Cluster %s/%s of Machine %s: %w", m.Namespace, m.Spec.ClusterName, m.Name, err)
	}
	return &cl, nil
}

// pausedWhy says how Cluster API pauses m ("" when it does not): its Cluster's spec.paused or paused annotation
// (clusterctl move pauses the Cluster before it moves it), or m's own paused annotation.
func pausedWhy(cl *clusterv1.Cluster, m *clusterv1.Machine) string {
	switch {
	case clusterapi.Paused(cl, cl):
		return "Cluster " + cl.Namespace + "/" + cl.Name + " of Machine " + m.Namespace + "/" + m.Name + " is paused (spec.paused, or annotation " + clusterv1.PausedAnnotation + ")"
	case clusterapi.Paused(nil, m):
		return "Machine " + m.Namespace + "/" + m.Name + " is paused (annotation " + clusterv1.PausedAnnotation + ")"
	}
	return ""
}

// notPaused reads the Machine's Cluster and holds the step (saying then) while Cluster API pauses either; a
// Cluster that cannot be read is not taken for one not paused: the step waits. ok is false when held.
func (r *Reconciler) notPaused(ctx context.Context, s *run, then string) (time.Duration, bool) {
	cl, err := r.capiCluster(ctx, s.machine)
	if err != nil {
		return r.hold(s, ReasonReadFailed, err.Error()+": no step while Cluster API's pause is not known", time.Time{}), false
	}
	if why := pausedWhy(cl, s.machine); why != "" {
		return r.hold(s, ReasonMachinePaused, why+": "+then, time.Time{}), false
	}
	return 0, true
}

// hostDown is the finding of flight's host rule of sv's compute host (hostFinding), proven at the moment it
// is used: the cached status only tells where to look. The VitalsCluster is read again from the API server (a
// finding flight has since cleared is not acted on), and the Machine's Node, read uncached from the workload
// cluster, must be unreachable itself: whoever may write the status cannot make a reporting Node look dead, so
// a forged or stale finding never hands back a Machine whose kubelet reports (it goes the usual way instead).
func (r *Reconciler) hostDown(ctx context.Context, vc *v1alpha1.VitalsCluster, sv *openstack.Server, node string) (v1alpha1.HostFinding, bool, error) {
	if _, cached := hostFinding(vc, sv); !cached {
		return v1alpha1.HostFinding{}, false, nil
	}
	var fresh v1alpha1.VitalsCluster
	if err := r.d.APIReader.Get(ctx, client.ObjectKeyFromObject(vc), &fresh); err != nil {
		return v1alpha1.HostFinding{}, false, fmt.Errorf("read VitalsCluster %s/%s again: %w", vc.Namespace, vc.Name, err)
	}
	h, down := hostFinding(&fresh, sv)
	if !down || node == "" {
		return h, down, nil
	}
	wc, err := r.workload(ctx, vc)
	if err != nil {
		return v1alpha1.HostFinding{}, false, err
	}
	var n corev1.Node
	switch err := wc.Client().Get(ctx, client.ObjectKey{Name: node}, &n); {
	case apierrors.IsNotFound(err):
		return h, true, nil // no Node: nothing of it reports either
	case err != nil:
		return v1alpha1.HostFinding{}, false, fmt.Errorf("read node %s: %w", node, err)
	}
	return h, nodes.Unreachable(&n), nil
}

// hostFinding is the finding of flight's host rule (status.flight.hostsDown) of sv's compute host, when it holds
// sv: the same per-project hostId Nova shows now, and sv among the servers it found unreachable there.
func hostFinding(vc *v1alpha1.VitalsCluster, sv *openstack.Server) (v1alpha1.HostFinding, bool) {
	if vc.Status.Flight == nil || sv.HostID == "" {
		return v1alpha1.HostFinding{}, false
	}
	for _, h := range vc.Status.Flight.HostsDown {
		if h.HostID == sv.HostID && slices.Contains(h.Servers, sv.ID) {
			return h, true
		}
	}
	return v1alpha1.HostFinding{}, false
}

// healthy is m's HealthCheckSucceeded condition when it is True (nil: not healthy, or not known).
func healthy(m *clusterv1.Machine) *metav1.Condition {
	if c := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineHealthCheckSucceededCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c
	}
	return nil
}

// poolOf is the pool of m's reboots, of which the remediation policy lets one at a time be in flight: the
// MachineDeployment of its MachineSet (label cluster.x-k8s.io/deployment-name: a rollout's old and new MachineSet
// are one pool), else the controller its ownerReferences name (a MachineSet, a control plane such as a
// KubeadmControlPlane), as "Kind/name"; "" when nothing controls it.
func poolOf(m *clusterv1.Machine) string {
	if md := m.Labels[clusterv1.MachineDeploymentNameLabel]; md != "" {
		return "MachineDeployment/" + md
	}
	if o := metav1.GetControllerOfNoCopy(m); o != nil {
		return o.Kind + "/" + o.Name
	}
	return ""
}

// controlPlane reports whether m is a control-plane Machine: labelled cluster.x-k8s.io/control-plane (as control
// plane providers label theirs), or controlled by a control plane (group controlplane.cluster.x-k8s.io).
func controlPlane(m *clusterv1.Machine) bool {
	if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
		return true
	}
	if o := metav1.GetControllerOfNoCopy(m); o != nil {
		group, _, _ := strings.Cut(o.APIVersion, "/")
		return group == clusterv1.GroupVersionControlPlane.Group
	}
	return false
}

// inFlight names, under pool, the servers of the other Machines of pool whose remediation has a reboot in flight
// (soft or hard rebooted, or recorded as started, waiting for its Machine): the policy's pool rule then holds this one. The remediations
// and their Machines are read from the API server, so that a reboot written a moment ago is seen (the operator
// runs the controller with one worker: no other reboot is between this read and its status write).
func (r *Reconciler) inFlight(ctx context.Context, self *v1alpha1.VitalsRemediation, pool string) (map[string][]string, error) {
	var list v1alpha1.VitalsRemediationList
	if err := r.d.APIReader.List(ctx, &list, client.InNamespace(self.Namespace)); err != nil {
		return nil, fmt.Errorf("list the remediations of namespace %s: %w", self.Namespace, err)
	}
	var ids []string
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == self.UID || o.Status.Server == "" || !o.DeletionTimestamp.IsZero() ||
			stepOf(o.Status.Phase) == "" && o.Status.Phase != v1alpha1.RemediationDraining {
			continue
		}
		ref, ok := machineOwner(o)
		if !ok {
			continue
		}
		var m clusterv1.Machine
		err := r.d.APIReader.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: ref.Name}, &m)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("read Machine %s/%s: %w", o.Namespace, ref.Name, err)
		case m.UID != ref.UID || !m.DeletionTimestamp.IsZero():
			continue
		}
		if poolOf(&m) == pool {
			ids = append(ids, o.Status.Server)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return map[string][]string{pool: ids}, nil
}

// machineCounts counts the Machines of m's Cluster (spec.clusterName, in its namespace, read from the API
// server), and those whose HealthCheckSucceeded condition is False (a MachineHealthCheck found them unhealthy):
// the storm rule's scope.
func (r *Reconciler) machineCounts(ctx context.Context, m *clusterv1.Machine) (unhealthy, total int, err error) {
	var list clusterv1.MachineList
	if err := r.d.APIReader.List(ctx, &list, client.InNamespace(m.Namespace)); err != nil {
		return 0, 0, fmt.Errorf("list the Machines of namespace %s: %w", m.Namespace, err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Spec.ClusterName != m.Spec.ClusterName || !o.DeletionTimestamp.IsZero() {
			continue
		}
		total++
		if c := meta.FindStatusCondition(o.Status.Conditions, clusterv1.MachineHealthCheckSucceededCondition); c != nil && c.Status == metav1.ConditionFalse {
			unhealthy++
		}
	}
	return unhealthy, total, nil
}

// workload is the workload cluster of vc (an error without access to workload clusters).
func (r *Reconciler) workload(ctx context.Context, vc *v1alpha1.VitalsCluster) (workload.Cluster, error) {
	if r.d.Workload == nil {
		return nil, errors.New("no access to workload clusters")
	}
	wc, err := r.d.Workload.For(ctx, vc)
	if err != nil {
		return nil, fmt.Errorf("the workload cluster of VitalsCluster %s/%s: %w", vc.Namespace, vc.Name, err)
	}
	return wc, nil
}

// recheck is the fence that reads the Machine's Node (uncached, through nodes) and its server again immediately
// before the reboot is sent (nodes.Recheck: the Node still naming the server, not excluded, no other Ready Node
// naming it, the server not excluded and still rebootable), then enters next.
func recheck(nodeReader client.Reader, servers nodes.ServerReader, w nodes.Want, next fencing.Fence) fencing.Fence {
	return fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		if _, err := nodes.Recheck(ctx, nodeReader, servers, w); err != nil {
			return nil, nil, err
		}
		return next.Enter(ctx)
	})
}

// quorum is etcd's quorum for a reboot of control-plane Machine m, as flight has it for a control-plane node
// (nodes.EtcdQuorum): the etcd pods of the workload cluster's kube-system (read uncached) on its Nodes, m's Node
// the target. Without the workload cluster there is no quorum to check: an error, and the reboot waits.
func (r *Reconciler) quorum(ctx context.Context, vc *v1alpha1.VitalsCluster, m *clusterv1.Machine) (remediation.Quorum, error) {
	wc, err := r.workload(ctx, vc)
	if err != nil {
		return remediation.Quorum{}, err
	}
	pods, err := nodes.EtcdPods(ctx, wc.Client())
	if err != nil {
		return remediation.Quorum{}, err
	}
	var ns corev1.NodeList
	if err := wc.Reader().List(ctx, &ns); err != nil {
		return remediation.Quorum{}, fmt.Errorf("list Nodes: %w", err)
	}
	return nodes.EtcdQuorum(m.Status.NodeRef.Name, ns.Items, pods), nil
}

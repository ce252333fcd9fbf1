package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// PodLookup finds a pod of this node.
type PodLookup interface {
	// Pod returns the pod namespace/name if it is bound to this node, as last seen.
	Pod(namespace, name string) (*corev1.Pod, bool)
	// HasSynced is true once the first list has completed.
	HasSynced() bool
}

// PodIndex keeps what the agent needs to know of the pods bound to its node (an informer selecting
// spec.nodeName on the server): their identity, node, phase and whether a container runs. Everything
// else is dropped before it is stored, so a node's pods cost a few hundred bytes each.
type PodIndex struct {
	store cache.Store
	ctrl  cache.Controller
}

// NewPodIndex builds the index of the pods bound to node; Run fills it.
func NewPodIndex(k *Kube, node string) *PodIndex {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return k.ListPods(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return k.WatchPods(ctx, opts)
		},
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.Pod{},
		Handler:       cache.ResourceEventHandlerFuncs{},
		Transform:     stripPod,
	})
	return &PodIndex{store: store, ctrl: ctrl}
}

// Run keeps the index until ctx is done. Failed lists and watches are retried by client-go's
// reflector, with a jittered exponential backoff.
func (p *PodIndex) Run(ctx context.Context) { p.ctrl.RunWithContext(ctx) }

// HasSynced is true once the first list has completed.
func (p *PodIndex) HasSynced() bool { return p.ctrl.HasSynced() }

// Pod returns the pod namespace/name if it is bound to this node.
func (p *PodIndex) Pod(namespace, name string) (*corev1.Pod, bool) {
	obj, ok, err := p.store.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	pod, ok := obj.(*corev1.Pod)
	return pod, ok
}

// stripPod keeps a pod's identity, node, phase and which containers run.
func stripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone (cache.DeletedFinalStateUnknown)
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp,
		},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: cs.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			})
		}
	}
	return out, nil
}

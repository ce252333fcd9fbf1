package cloudheal

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/controllers/pass"
)

// eventSource is the component of the Events cloudheal records in a workload cluster.
const eventSource = "vitals-cloudheal"

// pvEvent records a Normal Event on a PersistentVolume of the workload cluster (cluster-scoped: its Events
// live in the default namespace), through c's fenced writes (ctx carries the action's fence).
func pvEvent(ctx context.Context, c client.Client, pv, note string, now time.Time) error {
	ref := corev1.ObjectReference{Kind: "PersistentVolume", APIVersion: "v1", Name: pv}
	return workloadEvent(ctx, c, ref, corev1.EventTypeNormal, ReasonAttachmentRemoved, note, now)
}

// workloadEvent records an Event on ref in the workload cluster (in ref's namespace, default for a
// cluster-scoped object), through c's fenced writes (ctx carries the action's fence).
func workloadEvent(ctx context.Context, c client.Client, ref corev1.ObjectReference, typ, reason, note string, now time.Time) error {
	if len(note) > pass.MaxEventNote {
		note = note[:pass.MaxEventNote]
	}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	t := metav1.NewTime(now)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: ref.Name + "."},
		InvolvedObject: ref, Reason: reason, Message: note, Type: typ,
		Source: corev1.EventSource{Component: eventSource}, FirstTimestamp: t, LastTimestamp: t, Count: 1,
	}
	if err := c.Create(ctx, ev); err != nil {
		return fmt.Errorf("record an event on %s %s: %w", ref.Kind, ref.Name, err)
	}
	return nil
}

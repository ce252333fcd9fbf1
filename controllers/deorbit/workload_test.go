package deorbit

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// volumeSnapshot is a VolumeSnapshot of claim (or, without one, of a pre-provisioned content), with annotations.
func volumeSnapshot(ns, name, uid, claim string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(VolumeSnapshotList.GroupVersion().String())
	u.SetKind("VolumeSnapshot")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetAnnotations(annotations)
	if claim != "" {
		_ = unstructured.SetNestedField(u.Object, claim, "spec", "source", "persistentVolumeClaimName")
	} else {
		_ = unstructured.SetNestedField(u.Object, "content-"+name, "spec", "source", "volumeSnapshotContentName")
	}
	return u
}

// The VolumeSnapshots phase keeps the snapshots marked to keep and those of a claim marked so, and deletes the
// others each with its UID as precondition.
func TestSnapshots(t *testing.T) {
	keep := map[string]string{v1alpha1.AnnotationKeep: "true"}
	wl := workloadClient(t,
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "kept", Annotations: keep}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}})
	for _, u := range []*unstructured.Unstructured{
		volumeSnapshot("app", "of-kept", "u1", "kept", nil),
		volumeSnapshot("app", "marked", "u2", "data", keep),
		volumeSnapshot("app", "of-data", "u3", "data", nil),
		volumeSnapshot("app", "of-content", "u4", "", nil),
		// a claim of the same name in another namespace is not the one marked
		volumeSnapshot("other", "of-kept", "u5", "kept", nil),
	} {
		if err := wl.Create(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	deleted := map[string]types.UID{} // namespace/name: the UID precondition
	wl = interceptor.NewClient(wl.(client.WithWatch), interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := &client.DeleteOptions{}
			o.ApplyOptions(opts)
			mu.Lock()
			deleted[obj.GetNamespace()+"/"+obj.GetName()] = ""
			if o.Preconditions != nil && o.Preconditions.UID != nil {
				deleted[obj.GetNamespace()+"/"+obj.GetName()] = *o.Preconditions.UID
			}
			mu.Unlock()
			return c.Delete(ctx, obj, opts...)
		},
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &step{e: &Engine{}, in: Input{Target: target(), Settings: settings(), Policy: &asker{}}, st: &v1alpha1.DeorbitStatus{}, now: now}
	done, _, err := s.snapshots(context.Background(), wl)
	if err != nil || !done {
		t.Fatalf("snapshots: done %v, %v", done, err)
	}
	for _, tc := range []struct {
		id        string
		wantState string
		wantUID   types.UID // "": not deleted
	}{
		{id: "app/of-kept", wantState: v1alpha1.DeorbitKept},
		{id: "app/marked", wantState: v1alpha1.DeorbitKept},
		{id: "app/of-data", wantState: v1alpha1.DeorbitDeleting, wantUID: "u3"},
		{id: "app/of-content", wantState: v1alpha1.DeorbitDeleting, wantUID: "u4"},
		{id: "other/of-kept", wantState: v1alpha1.DeorbitDeleting, wantUID: "u5"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if got := state(s.st, v1alpha1.DeorbitVolumeSnapshot, tc.id); got != tc.wantState {
				t.Errorf("state %s, want %s", got, tc.wantState)
			}
			uid, ok := deleted[tc.id]
			switch {
			case tc.wantUID == "" && ok:
				t.Errorf("deleted, want kept")
			case tc.wantUID != "" && uid != tc.wantUID:
				t.Errorf("deleted %v with UID precondition %q, want %q", ok, uid, tc.wantUID)
			}
		})
	}
}

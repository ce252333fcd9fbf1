package operator

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// TestStripUnread: the informers keep no managed fields and no last-applied copy of the spec; every
// other annotation, the spec and the status stay; a tombstone passes as it is.
func TestStripUnread(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
	tests := []struct {
		name      string
		annotated map[string]string
		want      map[string]string
	}{
		{"managed fields and last-applied", map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{}}`, v1alpha1.AnnotationPaused: "true"},
			map[string]string{v1alpha1.AnnotationPaused: "true"}},
		{"managed fields only", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ManagedFields: managed,
				Annotations: maps.Clone(tt.annotated)},
				Spec: v1alpha1.ClusterSpec{PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"}}, Status: v1alpha1.ClusterStatus{ProjectID: "p"}}
			out, err := stripUnread(vc)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*v1alpha1.VitalsCluster)
			if got.ManagedFields != nil {
				t.Errorf("managed fields kept: %v", got.ManagedFields)
			}
			if !maps.Equal(got.Annotations, tt.want) {
				t.Errorf("annotations %v, want %v", got.Annotations, tt.want)
			}
			if len(got.Spec.PodCIDRs) != 1 || got.Status.ProjectID != "p" {
				t.Errorf("spec or status changed: %+v", got)
			}
		})
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/c"}
	if out, err := stripUnread(tomb); err != nil || out != tomb {
		t.Errorf("tombstone: %v, %v", out, err)
	}
}

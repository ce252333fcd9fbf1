package operator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// stripUnread is the transform of every object the operator's informers keep: it drops what no
// controller reads and what would double each object's memory (docs/benchmarks.md, issue 17): the
// managed fields (the apiserver's field ownership, about as large as the rest of a VitalsCluster) and
// kubectl's last-applied-configuration annotation (a copy of the spec). The controllers write
// statuses (the status subresource ignores metadata) and patch what they change (a patch names the
// fields it sets), so that nothing dropped here is ever written back.
func stripUnread(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // not an object (a tombstone): kept as it is
	}
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
			delete(a, corev1.LastAppliedConfigAnnotation)
			obj.SetAnnotations(a)
		}
	}
	return in, nil
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of the VitalsCluster, VitalsRemediation and
// VitalsRemediationTemplate resources.
var GroupVersion = schema.GroupVersion{Group: "vitals.vitalsproject.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &VitalsCluster{}, &VitalsClusterList{}, &VitalsRemediation{}, &VitalsRemediationList{},
		&VitalsRemediationTemplate{}, &VitalsRemediationTemplateList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

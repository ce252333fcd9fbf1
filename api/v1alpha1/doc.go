// Package v1alpha1 holds the VitalsCluster custom resource: one Kubernetes cluster running on OpenStack that
// Vitals' operator looks after (its cloud resources, its pod routes, and the controllers that repair
// them), together with the status those controllers report.
//
// +kubebuilder:object:generate=true
// +groupName=vitals.vitalsproject.io
package v1alpha1

// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

// DeorbitSpec configures deorbit: on deletion of the VitalsCluster, the cluster's volumes, load
// balancers and routes are deleted and the cloud is asked until it confirms, before the finalizer goes.
type DeorbitSpec struct {
	ControllerSpec `json:",inline"`
}

// DeorbitStatus records deorbit's progress so that a restarted operator resumes where it was.
type DeorbitStatus struct {
	// Phase deorbit is in.
	// +optional
	Phase string `json:"phase,omitempty"`
}

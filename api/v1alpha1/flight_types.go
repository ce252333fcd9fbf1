// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FlightSpec configures flight: the repairs that keep the cluster's nodes and networking healthy.
type FlightSpec struct {
	ControllerSpec `json:",inline"`
}

// FlightStatus reports flight's last pass.
type FlightStatus struct {
	// LastPassTime is when flight last looked at the cluster.
	// +optional
	LastPassTime *metav1.Time `json:"lastPassTime,omitempty"`
}

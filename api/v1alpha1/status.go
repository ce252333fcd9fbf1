// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

// Names of the controllers, each also the JSON name of its block of the status (status.access,
// status.routegc, status.flight, status.deorbit, status.cloudheal) and, prefixed with "vitals-", its field manager.
const (
	ControllerAccess    = "access"
	ControllerRouteGC   = "routegc"
	ControllerFlight    = "flight"
	ControllerDeorbit   = "deorbit"
	ControllerCloudHeal = "cloudheal"
)

// Controllers are the names of the controllers with a block of the status, in the status's order.
var Controllers = []string{ControllerAccess, ControllerRouteGC, ControllerFlight, ControllerDeorbit, ControllerCloudHeal}

// Controller returns the common part of the named controller's block of st, creating the block when
// create is set; nil when the block is absent (and create is not set) or the name is no controller's.
func (st *ClusterStatus) Controller(name string, create bool) *ControllerStatus {
	switch name {
	case ControllerAccess:
		if st.Access == nil && create {
			st.Access = &AccessStatus{}
		}
		if st.Access != nil {
			return &st.Access.ControllerStatus
		}
	case ControllerRouteGC:
		if st.RouteGC == nil && create {
			st.RouteGC = &RouteGCStatus{}
		}
		if st.RouteGC != nil {
			return &st.RouteGC.ControllerStatus
		}
	case ControllerFlight:
		if st.Flight == nil && create {
			st.Flight = &FlightStatus{}
		}
		if st.Flight != nil {
			return &st.Flight.ControllerStatus
		}
	case ControllerDeorbit:
		if st.Deorbit == nil && create {
			st.Deorbit = &DeorbitStatus{}
		}
		if st.Deorbit != nil {
			return &st.Deorbit.ControllerStatus
		}
	case ControllerCloudHeal:
		if st.CloudHeal == nil && create {
			st.CloudHeal = &CloudHealStatus{}
		}
		if st.CloudHeal != nil {
			return &st.CloudHeal.ControllerStatus
		}
	}
	return nil
}

// CopyBlock copies the named controller's block of from into st (nil when from has none).
func (st *ClusterStatus) CopyBlock(name string, from *ClusterStatus) {
	switch name {
	case ControllerAccess:
		st.Access = from.Access.DeepCopy()
	case ControllerRouteGC:
		st.RouteGC = from.RouteGC.DeepCopy()
	case ControllerFlight:
		st.Flight = from.Flight.DeepCopy()
	case ControllerDeorbit:
		st.Deorbit = from.Deorbit.DeepCopy()
	case ControllerCloudHeal:
		st.CloudHeal = from.CloudHeal.DeepCopy()
	}
}

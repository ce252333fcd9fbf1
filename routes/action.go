package routes

import (
	"time"

	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// Verbs of the route actions in the remediation policy.
const (
	VerbRemoveRoute = "RemoveRoute"
	VerbAddRoute    = "AddRoute"
)

// ActionID names a route in actions, exclusions and status: "destination@nexthop".
func ActionID(rt openstack.Route) string { return rt.Destination + "@" + rt.NextHop }

// RemoveAction is the removal of a route, as the policy sees it: excluded by its destination or by
// "destination@nexthop", and subject to the minimum proof age from evidence, when the route was first
// seen orphaned (zero: no proof age, e.g. deorbit's teardown).
func RemoveAction(rt openstack.Route, evidence time.Time) remediation.Action {
	return remediation.Action{Verb: VerbRemoveRoute, Kind: "route", ID: ActionID(rt), Name: rt.Destination, Evidence: evidence, Removal: true}
}

// AddAction is the re-adding of a missing pod route: a safe action (it puts back what the cluster needs and
// takes nothing away), never held by the storm rule.
func AddAction(rt openstack.Route) remediation.Action {
	return remediation.Action{Verb: VerbAddRoute, Kind: "route", ID: ActionID(rt), Name: rt.Destination, Class: remediation.Safe}
}

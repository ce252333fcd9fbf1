// Package openstack holds health checks of the OpenStack services a Vitals process depends on:
// Keystone (a token can be validated or renewed), Neutron (one cheap authenticated request) and
// Neutron quota headroom (a degraded check). Each constructor has the one shape of package checks:
// Name(NameOptions) (checks.Func, error), the cloud connection in the options.
//
// Every check coalesces: however often it is called, it sends at most one round of requests per
// MinInterval and answers the calls in between with the last result. The health manager's interval
// is the first guard against hammering a service; this is the second, for checks shared by several
// managers or run by hand.
package openstack

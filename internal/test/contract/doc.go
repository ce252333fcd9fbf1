// Package contract is the contract test suite of package openstack: Run exercises every resource
// call of *openstack.Cloud against a cloud and checks the behaviour controllers rely on (all pages
// read with a page size of 1, atomic route changes, If-Match conflicts, 404s, cascade deletes).
//
// The same suite runs against the real services (openstack's tests, through internal/test/testenv) and
// against the simulator (internal/test/cloudsim), so the simulator cannot drift from the real cloud. It
// uses no admin-only call where avoidable, and each test creates and removes its own resources
// under unique names, so runs can share a cloud.
package contract

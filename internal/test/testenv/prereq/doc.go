// Package prereq is the rule every test follows when something it needs is missing: a tool, root, a kernel
// feature, a service. Missing skips the test with a message saying what is missing, or fails it when
// VITALS_TESTENV_REQUIRED=1 (as CI and `make test` set it): there a missing prerequisite is a broken build,
// never a silent skip. Short skips a test that needs more than the unit level in -short runs.
//
// It depends on the standard library only, so that the tests of small packages (healthcheck, cnireport)
// can use it without linking the Kubernetes and OpenStack clients that package testenv brings. A test of
// this package keeps plain t.Skip, t.Skipf and t.SkipNow out of the repository's tests.
package prereq

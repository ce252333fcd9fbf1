// Package testenv connects tests to the real services that hack/testenv.sh starts: a kube-apiserver with etcd,
// OpenStack (Keystone and Neutron in the fast tier; Nova, Cinder, Glance, Placement and Octavia as well in the
// full tier), a private Docker engine, and, with the full tier, the workload cluster of the deorbit end-to-end
// tests (Workload: a kube-apiserver of its own with kube-controller-manager, the OpenStack cloud controller manager
// and Cinder CSI, acting in a project of their own).
//
// The services are described by environment variables (VITALS_TEST_KUBECONFIG, KUBEBUILDER_ASSETS, OS_*,
// VITALS_TEST_OPENSTACK, VITALS_TEST_DOCKER_HOST). When a group of them is absent from the environment, the
// package reads it from the env file that `make testenv-up` writes (.testenv/env at the repository root, found by
// walking up from the test's working directory), so a plain `go test ./pkg` works after `make testenv-up`.
// OS_* variables of the developer's shell are only used when VITALS_TEST_OPENSTACK is set too, so that a shell
// pointing at a real cloud never leaks into the tests.
//
// Each accessor skips the test with a clear message when the service is absent or when tests run with -short,
// and fails it instead when VITALS_TESTENV_REQUIRED=1 (set by CI): in CI a missing service is a broken build, not
// a reason to skip.
//
// The shared services are used by many test packages at once and must never be stopped or restarted by a test.
// Tests that need a service to go down use their own instance: PrivateKeystone (another Keystone process on the
// same database and keys) or PrivateKube (a kube-apiserver with its own etcd).
package testenv

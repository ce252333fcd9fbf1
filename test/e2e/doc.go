// Package e2e holds the end-to-end scenarios: Vitals' controllers, commands and chart against the real services
// that hack/ starts (kube-apiserver and etcd, Keystone, Neutron, Nova, Cinder, Octavia, a Docker engine, a
// workload cluster with kube-controller-manager, the OpenStack cloud controller manager and Cinder CSI, a Cluster
// API management cluster with CAPO). `make testenv-up` starts them once; `go test ./test/e2e/ -run TestX` then
// finds them through internal/test/testenv (it reads .testenv/env, or $VITALS_TESTENV_DIR/env). With
// VITALS_TESTENV_REQUIRED=1 (CI) a missing service fails the test instead of skipping it.
//
// # Writing a scenario
//
// Pick the fixture of the controller under test and start from one of its tests:
//
//   - routegc: newGCFixture (operator_routegc_test.go): a VitalsCluster over a real router, one pass at a time
//     through the runner, with a fake Event recorder (drainEvents) and the policy's decision counter.
//   - flight's routes and security groups: newFlFixture (operator_flight_test.go) with a flightWorkload.
//   - flight's node repair: newFNFixture (operator_flight_nodes_test.go): real servers in Nova, Nodes in the
//     kube-apiserver, Nova reached through the fault proxy.
//   - Cluster API external remediation: newRMFixture (operator_remediate_test.go).
//   - deorbit: newDeorbitFixture (operator_deorbit_test.go) over the workload cluster (wlOpen,
//     workload_helpers_test.go: claims, LoadBalancer Services and snapshots made by the real CSI and cloud
//     controller manager); Cluster API's lifecycle: capiOpen (capi_helpers_test.go).
//   - the workload cluster's RBAC: wlRBAC (workload_rbac_test.go) applies deploy/manifests/workload-rbac.yaml under
//     names of the test's own and gives its ServiceAccount's kubeconfig; flight's node repair, remediate and
//     cloudheal's load-balancer scenario reach their workload cluster only through it.
//   - tenancy: newTenancyFixture with opNewTenant, a project, user and credentials Secret of its own.
//   - the whole operator as a process or manager: opStart / opStartWith (operator_manager_test.go).
//
// The shared helpers live in operator_helpers_test.go: opKube (the shared kube-apiserver, a client and a
// namespace of the test's own), opPrivateKube (a kube-apiserver of the test's own, for tests that install CRDs or
// webhooks others must not see), opCloudNet and opNewNet (a network, subnet and router of the test's own),
// opFaultProxy (the cloud through the fault proxy), opEventually (the one poll helper: wait for a state, never
// for a fixed time), condition and hasAction (a VitalsCluster's condition and action lines).
//
// Rules every scenario follows:
//
//   - Names of its own. Other tests run against the same services at the same time: every namespace, network,
//     server and volume a test makes carries a random suffix (opRandHex) and is removed in t.Cleanup.
//   - Wait for the state, not for the time. A test waits with opEventually for what it needs (the object seen
//     by the informer, the condition set, the request counted at the proxy), never with time.Sleep standing for
//     "the cache has caught up" or "one pass has run": the suite must stay green on a loaded machine. Deadlines
//     are generous (a minute where a pass takes a second); no test asserts a duration.
//   - Count writes at the fault proxy. "Acted once" and "never touched" are proved on the wire: add a Rule that
//     matches the write (method and path, no fault) and read Proxy.Count(rule) or Proxy.Matched(rule) after the
//     scenario, rather than reading the controller's own status.
//   - Failures from the fault proxy, not from mocks: latency, an error status, a reset, a truncated body, or a
//     sequence (fail twice, then pass) in front of the real service.
//   - A prerequisite that is missing fails under VITALS_TESTENV_REQUIRED=1: use testenv's accessors or
//     internal/test/testenv/prereq, never a plain t.Skip (prereq's TestNoPlainSkip refuses one).
package e2e

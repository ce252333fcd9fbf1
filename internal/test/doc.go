// Package test is the root of the test harness: testenv (the real services of hack/), cloudsim (the OpenStack
// simulator), faultproxy (failures in front of a real service), benchproc, errbody, rawhttp (hand-written
// HTTP answers) and testcert (the keys and certificates tests need). Production code never imports anything below it; this package's test (TestProductionNeverImportsTheHarness) checks that with
// `go list`. The benchmarks (bench/) and the simulator's command (cmd/vitals-cloudsim,
// internal/cli/cloudsimcmd) are the only other importers.
package test

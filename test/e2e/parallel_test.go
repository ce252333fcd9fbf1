package e2e

// Which scenarios run side by side. Most of a scenario's time is waiting (for an operator's pass, a cloud
// delete, a dwell), so the long ones call parallel(t) and run beside each other once the package's serial tests
// are done. A scenario may run in parallel when what it writes is its own: a private kube-apiserver
// (testenv.PrivateKube) or a namespace of its own on the shared one, its own OpenStack networks, routers and
// projects, its own fault proxies and metrics registry, and an operator that watches its own namespace only.
// What cannot be split is held by one scenario at a time:
//
//   - the workload cluster (testenv.Workload): deorbit empties it, cluster-wide, and its project and router
//     are the getting-started guide's;
//   - the Cluster API management cluster (testenv.CAPI) and its project.
//
// The scenarios on those run one after another from the start of the parallel phase, each a chain beside the
// others; at most parallelScenarios of the other scenarios run beside them. go test's -parallel would count
// the scenarios waiting for a shared service as running and start the chains late (it resumes paused tests in
// no set order), so TestMain lifts it unless it is given, and this package bounds its scenarios itself.
//
// Serial stay the tests that change the process (t.Setenv, slog.SetDefault, klog's logger), and those whose
// replicas must renew leases of a few seconds while they work (TestOperatorSharding): on two busy cores, beside
// other scenarios, a starved replica loses its ranges, as it must, and the scenario's deadlines pass. The
// serial tests run first, before any parallel one starts.
//
// The package keeps both cores busy: hack/test.sh (make test) runs it after every other package, because
// test/node's kubelets, beside it, missed their waits (hack/README.md, "test/e2e side by side").

import (
	"flag"
	"os"
	"sync"
	"testing"
)

// parallelScenarios is how many scenarios that hold no shared service run at once: on 2 cores, three keep
// both busy without starving the services the scenarios wait on.
const parallelScenarios = 3

var scenarioSlots = make(chan struct{}, parallelScenarios)

// A shared service of the harness that one scenario uses at a time.
var (
	workloadCluster sync.Mutex
	capiCluster     sync.Mutex
)

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "64") // more than this package has: parallel() bounds them
	}
	os.Exit(m.Run())
}

// parallel runs the test beside the package's other parallel tests: holding each shared service given (in the
// order of the declarations above) until the test and all its cleanups are done, or else one of the
// parallelScenarios slots.
func parallel(t *testing.T, shared ...*sync.Mutex) {
	t.Helper()
	t.Parallel()
	if len(shared) == 0 {
		scenarioSlots <- struct{}{}
		t.Cleanup(func() { <-scenarioSlots })
		return
	}
	for _, mu := range shared {
		hold(t, mu)
	}
}

// hold takes mu until the test is done and the cleanups registered after this call have run.
func hold(t *testing.T, mu *sync.Mutex) {
	t.Helper()
	mu.Lock()
	t.Cleanup(mu.Unlock)
}

package remediation

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Names of the per-cluster checks the gate reads.
const (
	// CheckCloud: the cluster's credentials work and its resources were proven to be its project's
	// (set by the tenancy resolver).
	CheckCloud = "cloud"
	// CheckWorkload: the workload cluster's API answers and the informers on it have synced (set by the
	// workload access).
	CheckWorkload = "workload"
)

// CheckResult is the latest result of one per-cluster check.
type CheckResult struct {
	Err  error
	Time time.Time
	// LastFailure is when the check last failed as an outage, and LastErr how (kept after it passes
	// again: the outage freeze counts from it). A failure that is not an outage (see NotAnOutage) closes
	// the gate while it lasts and leaves them as they were.
	LastFailure time.Time
	LastErr     string
}

// NotAnOutage is implemented by check errors that say whether they are an outage. A check that fails
// because the cluster is not configured yet (no kubeconfig Secret, a kubeconfig the operator refuses) is
// not an outage: its evidence was missing, not wrong, and once the configuration is fixed nothing needs to
// wait out the freeze. Errors without the method are outages.
type NotAnOutage interface {
	NotAnOutage() bool
}

// IsOutage says whether a failed check's err counts as an outage for the outage freeze.
func IsOutage(err error) bool {
	var n NotAnOutage
	if errors.As(err, &n) && n.NotAnOutage() {
		return false
	}
	return err != nil
}

// Checks holds the per-cluster checks that gate remediation. Safe for concurrent use.
type Checks interface {
	Set(cluster types.NamespacedName, check string, err error)
	// Get returns the latest result; ok is false when the check never reported (a closed gate).
	Get(cluster types.NamespacedName, check string) (r CheckResult, ok bool)
	// Forget drops every check of a cluster that is gone.
	Forget(cluster types.NamespacedName)
}

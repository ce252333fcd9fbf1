package remediation

import (
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
	// LastFailure is when the check last failed, and LastErr how (kept after it passes again: the
	// outage freeze counts from it).
	LastFailure time.Time
	LastErr     string
}

// Checks holds the per-cluster checks that gate remediation. Safe for concurrent use.
type Checks interface {
	Set(cluster types.NamespacedName, check string, err error)
	// Get returns the latest result; ok is false when the check never reported (a closed gate).
	Get(cluster types.NamespacedName, check string) (r CheckResult, ok bool)
	// Forget drops every check of a cluster that is gone.
	Forget(cluster types.NamespacedName)
}

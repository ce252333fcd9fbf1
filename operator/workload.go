package operator

import (
	"fmt"

	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

// setupWorkload builds the access to the workload clusters that every controller reads them through
// (one per VitalsCluster, from its kubeconfig Secret), and the queue by which its health changes
// reconcile the access controller. It reports each cluster's remediation.CheckWorkload to checks; it is
// no check of the operator's own: a workload cluster's outage never fails /livez or /readyz.
func (o *Operator) setupWorkload(checks remediation.Checks) (*workload.Manager, *access.WorkloadChanges, error) {
	opts := o.opts
	changes := access.NewWorkloadChanges()
	m, err := workload.NewManager(workload.Options{
		Secrets:    o.mgr.GetAPIReader(), // single GETs: the operator never lists or watches Secrets
		Checks:     checks,
		Changed:    changes.Changed,
		AllowLocal: opts.AllowLocalWorkload,
		Local:      opts.RestConfig,
		Rules:      workload.KubeconfigRules{AllowInsecure: opts.AllowInsecureWorkload, AllowLoopback: opts.AllowLoopbackWorkload},
		Limits: workload.Limits{QPS: opts.WorkloadQPS, Burst: opts.WorkloadBurst,
			TeardownQPS: opts.WorkloadTeardownQPS, TeardownBurst: opts.WorkloadTeardownBurst},
		HealthInterval: opts.CheckInterval,
		HealthTimeout:  opts.CheckTimeout,
		Registerer:     opts.Registry,
		Logger:         opts.Logger,
		Clock:          opts.Clock,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("operator: workload access: %w", err)
	}
	// Stops every access when the manager stops (after the controllers that use them).
	if err := o.mgr.Add(m); err != nil {
		return nil, nil, fmt.Errorf("operator: workload access: %w", err)
	}
	return m, changes, nil
}

// Workload is the access to the workload clusters (deorbit and flight read them through it).
func (o *Operator) Workload() *workload.Manager { return o.workload }

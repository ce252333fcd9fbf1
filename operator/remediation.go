package operator

import (
	"fmt"

	kclient "k8s.io/client-go/kubernetes"

	"github.com/vitalsproject/vitals/remediation"
)

// DefaultPauseConfigMap is the name of the operator-wide pause switch in the operator's namespace.
const DefaultPauseConfigMap = "vitals-remediation"

// remediationPolicy builds the one policy every controller asks: the operator-wide limits, the pause
// switch, and the gate on the operator's own readiness — Kubernetes, Keystone and Neutron when the
// operator has credentials, and the Lease when it elects a leader (a replica that lost it must stop
// acting at once, not only when its elector gives up). With sharding, each action is held unless this
// replica holds its cluster's range (fenced), and the operator-wide budget is split by shares of ranges.
// The policy makes the fences of every write: bounded by the shard range's or the leader's validity
// and the write timeout, re-checking the pauses, exclusions and dry-run on the cluster read live.
func (o *Operator) remediationPolicy(cs kclient.Interface) (*remediation.Engine, error) {
	opts := o.opts
	gate := []string{CheckKubernetes}
	if o.cloud != nil {
		gate = append(gate, CheckKeystone, CheckNeutron)
	}
	if opts.LeaderElect {
		gate = append(gate, CheckLeaderLease)
	}
	sw := newPauseSwitch(cs, opts.LeaderElectionNamespace, opts.PauseConfigMap)
	if err := o.mgr.Add(sw); err != nil {
		return nil, fmt.Errorf("operator: pause switch: %w", err)
	}
	ro := remediation.Options{
		Limits:          opts.Remediation,
		Checks:          remediation.NewChecks(opts.Clock),
		Readiness:       o.health,
		ReadinessChecks: gate,
		Switch:          sw,
		Seed:            o.mgr.GetClient(),
		Live:            o.mgr.GetAPIReader(),
		WriteTimeout:    opts.WriteTimeout,
		Recorder:        o.mgr.GetEventRecorder("vitals-remediation"),
		Metrics:         remediation.NewMetrics(opts.Registry),
		Clock:           opts.Clock,
	}
	if o.leader != nil {
		ro.Validity = o.leader
	}
	if o.shard != nil {
		// every cluster's status, not this replica's cached part: a range's history moves with it
		ro.Shard, ro.Seed, ro.Validity = o.shard, o.mgr.GetAPIReader(), o.shard
		ro.ReadinessChecks = append(ro.ReadinessChecks, CheckSharding)
	}
	p, err := remediation.New(ro)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	return p, nil
}

// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of the settings a VitalsCluster leaves unset. They live with the types, so that the controllers,
// `vitals doctor` and the documentation read the same values. The operator's flags replace the interval and
// budget defaults of routegc and flight for every cluster that sets none (ControllerDefaults).
const (
	// DefaultInterval between two passes of routegc or flight.
	DefaultInterval = time.Minute
	// DefaultBudget is the most changes routegc or flight makes in one pass (a cap per pass; the
	// remediation policy's budget over its window applies on top).
	DefaultBudget = 10
	// DefaultMaxRoutes is Neutron's default max_routes.
	DefaultMaxRoutes = 30
	// DefaultDeorbitBudget is the most deletes deorbit issues in one step.
	DefaultDeorbitBudget = 50
	// DefaultGiveUpAfter is how long deorbit tries before it gives up with a debris report.
	DefaultGiveUpAfter = 24 * time.Hour
	// DefaultUnreachableGracePeriod is how long deorbit waits for an unreachable workload cluster.
	DefaultUnreachableGracePeriod = 10 * time.Minute
	// DefaultCloudWaitTimeout bounds deorbit's wait for the cloud to confirm its deletes.
	DefaultCloudWaitTimeout = 15 * time.Minute
)

// ControllerDefaults are the operator's defaults for the common settings of a periodic controller.
type ControllerDefaults struct {
	// Interval between passes (zero: DefaultInterval).
	Interval time.Duration
	// Budget is the cap on changes per pass (nil: DefaultBudget; 0: no changes).
	Budget *int
}

// CommonSettings are the settings every periodic controller has, defaults applied.
type CommonSettings struct {
	Enabled  bool
	Interval time.Duration
	// Budget is the cap on changes in one pass.
	Budget int
	DryRun bool
}

// Settings are s with the defaults d (and the API's where d sets none) applied.
func (s *ControllerSpec) Settings(d ControllerDefaults) CommonSettings {
	out := CommonSettings{Enabled: s.Enabled == nil || *s.Enabled, Interval: DefaultInterval, Budget: DefaultBudget, DryRun: s.DryRun}
	if d.Interval > 0 {
		out.Interval = d.Interval
	}
	if d.Budget != nil {
		out.Budget = *d.Budget
	}
	if s.Interval != nil && s.Interval.Duration > 0 {
		out.Interval = s.Interval.Duration
	}
	if s.Budget != nil {
		out.Budget = int(*s.Budget)
	}
	return out
}

// IsEnabled reports whether the repair is on (default true).
func (r RepairSpec) IsEnabled() bool { return r.Enabled == nil || *r.Enabled }

// MaxRoutesOrDefault is the router's route limit (default DefaultMaxRoutes).
func (s *FlightSpec) MaxRoutesOrDefault() int {
	if s.MaxRoutes != nil {
		return int(*s.MaxRoutes)
	}
	return DefaultMaxRoutes
}

// DeorbitSettings are deorbit's settings, defaults applied.
type DeorbitSettings struct {
	Enabled                bool
	DryRun                 bool
	Budget                 int
	GiveUpAfter            time.Duration
	UnreachableGracePeriod time.Duration
	CloudWaitTimeout       time.Duration
}

// Settings are s with the defaults applied.
func (s *DeorbitSpec) Settings() DeorbitSettings {
	out := DeorbitSettings{Enabled: s.Enabled == nil || *s.Enabled, DryRun: s.DryRun, Budget: DefaultDeorbitBudget,
		GiveUpAfter: DefaultGiveUpAfter, UnreachableGracePeriod: DefaultUnreachableGracePeriod, CloudWaitTimeout: DefaultCloudWaitTimeout}
	if s.Budget != nil && *s.Budget >= 0 {
		out.Budget = int(*s.Budget)
	}
	if s.GiveUpAfter != nil && s.GiveUpAfter.Duration > 0 {
		out.GiveUpAfter = s.GiveUpAfter.Duration
	}
	if s.UnreachableGracePeriod != nil && s.UnreachableGracePeriod.Duration >= 0 {
		out.UnreachableGracePeriod = s.UnreachableGracePeriod.Duration
	}
	if s.CloudWaitTimeout != nil && s.CloudWaitTimeout.Duration >= 0 {
		out.CloudWaitTimeout = s.CloudWaitTimeout.Duration
	}
	return out
}

// Defaults of the node repair (spec.controllers.flight.repairs.nodes).
const (
	// DefaultUnhealthyTimeout is how long Ready must have been False or Unknown (the default
	// unhealthyConditions): medik8s NHC and magnum-auto-healer use 300 s, Cluster API's examples 5m.
	DefaultUnhealthyTimeout = 5 * time.Minute
	// DefaultNodeStartupTimeout is how long an ACTIVE server may go without a Node.
	DefaultNodeStartupTimeout = 15 * time.Minute
	DefaultSoftRebootTimeout  = 5 * time.Minute
	DefaultHardRebootTimeout  = 10 * time.Minute
	// DefaultDrainTimeout bounds the drain before a step; MinDrainTimeout is the least it is taken as.
	DefaultDrainTimeout = 10 * time.Minute
	MinDrainTimeout     = time.Minute
	// DefaultServerCooldown: a new escalation of a server takes its first step this long after its last.
	DefaultServerCooldown = time.Hour
	// DefaultServerMaxSteps disruptive steps per server in DefaultServerWindow.
	DefaultServerMaxSteps = 3
	DefaultServerWindow   = 24 * time.Hour
	// DefaultOutageFreeze holds disruptive actions after an outage (spec.remediation.outageFreeze).
	DefaultOutageFreeze = 10 * time.Minute
)

// NodeSettings are the node repair's settings, defaults applied.
type NodeSettings struct {
	Enabled             bool
	UnhealthyConditions []UnhealthyCondition
	NodeStartupTimeout  time.Duration
	// NodeSelector is nil when every Node is selected.
	NodeSelector  *metav1.LabelSelector
	NodePoolLabel string
	DrainTimeout  time.Duration
	DrainForce    DrainForce
	SoftReboot    time.Duration
	HardReboot    time.Duration
	// Delete is false when spec.delete is false; a delete also needs ReplacementKey and a server that
	// carries it.
	Delete bool
	// PowerOn is false when spec.powerOn is false.
	PowerOn bool
	// HostDown is false when spec.hostDown.enabled is false; HostDownNodes is spec.hostDown.minNodes.
	HostDown       bool
	HostDownNodes  int
	ReplacementKey string
	Cooldown       time.Duration
	MaxSteps       int
	Window         time.Duration
	ControlPlane   bool
}

// DefaultUnhealthyConditions are Ready False or Unknown for DefaultUnhealthyTimeout.
func DefaultUnhealthyConditions() []UnhealthyCondition {
	d := metav1.Duration{Duration: DefaultUnhealthyTimeout}
	return []UnhealthyCondition{{Type: "Ready", Status: "False", Timeout: d}, {Type: "Ready", Status: "Unknown", Timeout: d}}
}

// Settings are r with the defaults applied.
func (r *NodeRepair) Settings() NodeSettings {
	s := NodeSettings{Enabled: r.IsEnabled(), UnhealthyConditions: r.UnhealthyConditions, NodeStartupTimeout: DefaultNodeStartupTimeout,
		NodeSelector: r.NodeSelector, NodePoolLabel: r.NodePoolLabel, DrainTimeout: DefaultDrainTimeout, DrainForce: DrainForceWhenUnreachable,
		SoftReboot: DefaultSoftRebootTimeout, HardReboot: DefaultHardRebootTimeout, Delete: r.Delete == nil || *r.Delete,
		PowerOn: r.PowerOn == nil || *r.PowerOn, Cooldown: DefaultServerCooldown, MaxSteps: DefaultServerMaxSteps, Window: DefaultServerWindow,
		HostDown: true, HostDownNodes: 2}
	if h := r.HostDown; h != nil {
		s.HostDown = h.Enabled == nil || *h.Enabled
		if h.MinNodes != nil && *h.MinNodes >= 2 {
			s.HostDownNodes = int(*h.MinNodes)
		}
	}
	if len(s.UnhealthyConditions) == 0 {
		s.UnhealthyConditions = DefaultUnhealthyConditions()
	}
	set := func(dst *time.Duration, d *metav1.Duration) {
		if d != nil && d.Duration >= 0 {
			*dst = d.Duration
		}
	}
	set(&s.NodeStartupTimeout, r.NodeStartupTimeout)
	set(&s.SoftReboot, r.SoftRebootTimeout)
	set(&s.HardReboot, r.HardRebootTimeout)
	if d := r.Drain; d != nil {
		set(&s.DrainTimeout, d.Timeout)
		s.DrainTimeout = max(s.DrainTimeout, MinDrainTimeout)
		if d.Force != "" {
			s.DrainForce = d.Force
		}
	}
	if r.Replacement != nil {
		s.ReplacementKey = r.Replacement.MetadataKey
	}
	if p := r.PerServer; p != nil {
		set(&s.Cooldown, p.Cooldown)
		if p.MaxSteps != nil && *p.MaxSteps > 0 {
			s.MaxSteps = int(*p.MaxSteps)
		}
		if p.Window != nil && p.Window.Duration > 0 {
			s.Window = p.Window.Duration
		}
	}
	if c := r.ControlPlane; c != nil && c.Enabled != nil {
		s.ControlPlane = *c.Enabled
	}
	return s
}

// OutageFreezeOrDefault is spec.remediation.outageFreeze (default DefaultOutageFreeze).
func (s *RemediationSpec) OutageFreezeOrDefault() time.Duration {
	if s.OutageFreeze != nil && s.OutageFreeze.Duration >= 0 {
		return s.OutageFreeze.Duration
	}
	return DefaultOutageFreeze
}

// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

import "github.com/prometheus/client_golang/prometheus"

// Metrics of the remediate controller. A nil *Metrics records nothing.
type Metrics struct {
	// Steps counts the reboots asked for, by step (soft, hard) and outcome (done, failed, held, dryrun).
	Steps *prometheus.CounterVec // step, outcome
	// Stopped counts the remediations that stopped, by reason (NoRecovery, ForeignServer, NoServer, ...).
	Stopped *prometheus.CounterVec // reason
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_remediate_steps_total", Help: "Reboots of Cluster API Machines' servers the remediate controller asked for, by step (soft, hard) and outcome (done, failed, held, dryrun).",
		}, []string{"step", "outcome"}),
		Stopped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_remediate_stopped_total", Help: "VitalsRemediations that stopped with nothing more to do, by reason (NoRecovery: the hard reboot did not bring the Machine back).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.Steps, m.Stopped)
	}
	return m
}

func (m *Metrics) step(step, outcome string) {
	if m != nil {
		m.Steps.WithLabelValues(step, outcome).Inc()
	}
}

func (m *Metrics) stopped(reason string) {
	if m != nil {
		m.Stopped.WithLabelValues(reason).Inc()
	}
}

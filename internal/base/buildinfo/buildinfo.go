// Package buildinfo exports the version of the running binary as a Prometheus metric,
// vitals_build_info{version,commit,goversion} 1, as Prometheus' own prometheus_build_info and
// kube-state-metrics' build information do: join it on (pod) or (instance) to see which version runs where.
// It is apart from internal/base/version, which every binary links, so that a binary without metrics (the
// simulator, the container healthcheck) does not link Prometheus' client.
package buildinfo

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vitalsproject/vitals/internal/base/version"
)

// Name is the metric's name.
const Name = "vitals_build_info"

// Collector returns the metric of in: one series, value 1.
func Collector(in version.Info) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vitals_build_info",
		Help: "1, labelled with the version, the commit (with -modified when the tree had changes) and the Go version of the running binary.",
	}, []string{"version", "commit", "goversion"})
	commit := in.Commit
	if commit != "" && in.Modified {
		commit += "-modified"
	}
	g.WithLabelValues(in.Version, commit, in.GoVersion).Set(1)
	return g
}

// Register registers the metric of the running binary with reg; registered already is no error.
func Register(reg prometheus.Registerer) error {
	err := reg.Register(Collector(version.Get()))
	if errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return nil
	}
	return err
}

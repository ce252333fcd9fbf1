package kubernetes

import (
	"github.com/vitalsproject/vitals/health"
	"time"

	"k8s.io/utils/clock"
)

// Options are common to every check of this package.
type Options struct {
	// MinInterval between two rounds of requests (0: 5s).
	MinInterval time.Duration
	// Clock (nil: the real one).
	Clock clock.PassiveClock
}

func (o Options) coalescer() *health.Coalescer {
	if o.MinInterval <= 0 {
		o.MinInterval = 5 * time.Second
	}
	return health.NewCoalescer(o.Clock, o.MinInterval)
}

func (o Options) clock() clock.PassiveClock {
	if o.Clock == nil {
		return clock.RealClock{}
	}
	return o.Clock
}

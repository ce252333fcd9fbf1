package canary

import (
	"fmt"
	"time"

	"github.com/vitalsproject/vitals/netprobe"
)

// Protocol limits.
const (
	// Version of the protocol the canary speaks (Hello.Version).
	Version = 1
	// MaxLine bounds one JSON line in either direction.
	MaxLine = 128 << 10
	// MaxProbes bounds the probes of one Request.
	MaxProbes = 256
	// MaxTimeout bounds the timeout of one Request.
	MaxTimeout = 30 * time.Second
	// MaxInFlight bounds the Requests a canary runs at once; more are answered with an error.
	MaxInFlight = 8
)

// DefaultSocketPath is where the agent listens for its canary (the chart mounts the directory into
// both pods).
const DefaultSocketPath = "/run/vitals/canary/canary.sock"

// DefaultPort is the canary's TCP port on the pod network.
const DefaultPort = 8091

// Hello is the canary's first line: who it is.
type Hello struct {
	Version int `json:"version"`
	// Pod is namespace/name, PodIP its address on the pod network (the downward API's status.podIP);
	// the agent leaves that address out of its peers.
	Pod   string `json:"pod,omitempty"`
	PodIP string `json:"podIP,omitempty"`
}

// Request asks the canary to run probes from the pod network, each within TimeoutMS milliseconds.
type Request struct {
	ID        uint64           `json:"id"`
	TimeoutMS int64            `json:"timeoutMs"`
	Probes    []netprobe.Probe `json:"probes"`
}

// Validate checks a request against the protocol's limits.
func (r Request) Validate() error {
	if len(r.Probes) == 0 || len(r.Probes) > MaxProbes {
		return fmt.Errorf("expected 1 to %d probes, got %d", MaxProbes, len(r.Probes))
	}
	if t := time.Duration(r.TimeoutMS) * time.Millisecond; t <= 0 || t > MaxTimeout {
		return fmt.Errorf("expected a timeout of 1ms to %s, got %dms", MaxTimeout, r.TimeoutMS)
	}
	for i, p := range r.Probes {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("probe %d: %w", i, err)
		}
	}
	return nil
}

// Timeout is the request's timeout.
func (r Request) Timeout() time.Duration { return time.Duration(r.TimeoutMS) * time.Millisecond }

// Response answers a Request: one result per probe, in order ("" for success, else a netprobe
// Failure's words), or Error (Busy or Invalid) when the request was refused.
type Response struct {
	ID      uint64   `json:"id"`
	Results []string `json:"results,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Refusals of a Request.
const (
	// Busy: MaxInFlight requests are running.
	Busy = "busy"
	// Invalid: the request broke the protocol (Request.Validate).
	Invalid = "invalid request"
)

// Errors reads the results of a response to a request of n probes: each result as a netprobe Failure
// (words that are not one are Failed), nil for success.
func (r Response) Errors(n int) ([]error, error) {
	if r.Error != "" {
		return nil, netprobe.CanaryUnavailable
	}
	if len(r.Results) != n {
		return nil, netprobe.CanaryUnavailable
	}
	out := make([]error, n)
	for i, s := range r.Results {
		if s != "" {
			out[i] = netprobe.Canonical(s)
		}
	}
	return out, nil
}

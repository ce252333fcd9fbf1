package cloudsim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration string ("1.5s").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string ("30s") or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"1.5s\", got %s", b)
	}
	*d = Duration(n)
	return nil
}

// Knobs are the simulator's behaviour settings. The zero value of a latency means "at the
// next read"; transitions never happen inside the request that starts them.
type Knobs struct {
	// TokenTTL is how long an issued token is valid (default 1h).
	TokenTTL Duration `json:"token_ttl"`
	// MaxRoutes is Neutron's max_routes: more routes on one router answer 400 RoutesExhausted
	// (default 30).
	MaxRoutes int `json:"max_routes"`
	// AllowUnconnectedNexthop accepts routes whose nexthop is on no subnet attached to the
	// router. Real Neutron refuses them (400 InvalidRoutes); the default does too.
	AllowUnconnectedNexthop bool `json:"allow_unconnected_nexthop"`

	ServerBuildLatency  Duration `json:"server_build_latency"`
	ServerRebootLatency Duration `json:"server_reboot_latency"`
	ServerDeleteLatency Duration `json:"server_delete_latency"`

	VolumeCreateLatency Duration `json:"volume_create_latency"`
	VolumeDeleteLatency Duration `json:"volume_delete_latency"`
	// VolumesStuckDeleting keeps every deleted volume in "deleting" for ever.
	VolumesStuckDeleting bool `json:"volumes_stuck_deleting"`
	// StuckVolumes keeps the volumes with these IDs or names in "deleting" for ever.
	StuckVolumes []string `json:"stuck_volumes,omitempty"`

	LBCreateLatency Duration `json:"lb_create_latency"`
	LBDeleteLatency Duration `json:"lb_delete_latency"`

	// SecurityGroupUpdateLatency delays every call that changes security groups: rule create
	// and delete, a port's security groups or allowed address pairs, Nova's
	// addSecurityGroup/removeSecurityGroup. The call answers after the delay.
	SecurityGroupUpdateLatency Duration `json:"security_group_update_latency"`
	// RequestLatency delays every API call (not the admin API).
	RequestLatency Duration `json:"request_latency"`
}

// DefaultKnobs are the knobs of a new simulator.
func DefaultKnobs() Knobs {
	return Knobs{TokenTTL: Duration(time.Hour), MaxRoutes: 30}
}

func (k Knobs) validate() error {
	if k.TokenTTL <= 0 {
		return fmt.Errorf("token_ttl: must be positive, got %s", time.Duration(k.TokenTTL))
	}
	if k.MaxRoutes < 0 {
		return fmt.Errorf("max_routes: must be 0 or more, got %d", k.MaxRoutes)
	}
	for name, d := range map[string]Duration{
		"server_build_latency": k.ServerBuildLatency, "server_reboot_latency": k.ServerRebootLatency,
		"server_delete_latency": k.ServerDeleteLatency, "volume_create_latency": k.VolumeCreateLatency,
		"volume_delete_latency": k.VolumeDeleteLatency, "lb_create_latency": k.LBCreateLatency,
		"lb_delete_latency": k.LBDeleteLatency, "security_group_update_latency": k.SecurityGroupUpdateLatency,
		"request_latency": k.RequestLatency,
	} {
		if d < 0 {
			return fmt.Errorf("%s: must not be negative, got %s", name, time.Duration(d))
		}
	}
	return nil
}

func (k Knobs) volumeStuck(v *volume) bool {
	if k.VolumesStuckDeleting {
		return true
	}
	for _, s := range k.StuckVolumes {
		if s == v.ID || (s != "" && s == v.Name) {
			return true
		}
	}
	return false
}

// Fault makes matching API calls fail. Services: identity, network, compute, volume,
// load-balancer, or empty for all.
type Fault struct {
	ID      string `json:"id,omitempty"`
	Service string `json:"service,omitempty"`
	// Method matches the HTTP method; empty matches all.
	Method string `json:"method,omitempty"`
	// Path is a regular expression matched against the request path (e.g. "/routers/[^/]+$").
	Path string `json:"path,omitempty"`
	// Query, when set, must be a substring of the raw query (e.g. "marker=").
	Query string `json:"query,omitempty"`
	// Status is the HTTP status to answer (with the service's error body). 0 with a Latency
	// only delays the call.
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// Latency delays the call before it fails (or passes, when Status is 0).
	Latency Duration `json:"latency,omitempty"`
	// Times is how many calls to fail; 0 is every call.
	Times int `json:"times,omitempty"`
	// Skip lets this many matching calls pass before the fault starts.
	Skip int `json:"skip,omitempty"`
	// Hits counts the calls this fault changed.
	Hits int `json:"hits"`

	re *regexp.Regexp
}

func (f *Fault) compile() error {
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("status: want 400-599 or 0, got %d", f.Status)
	}
	if f.Status == 0 && f.Latency == 0 {
		return fmt.Errorf("status or latency: a fault needs one of them")
	}
	if f.Times < 0 || f.Skip < 0 {
		return fmt.Errorf("times and skip: must not be negative")
	}
	switch f.Service {
	case "", svcIdentity, svcNetwork, svcCompute, svcVolume, svcLB:
	default:
		return fmt.Errorf("service: want one of identity, network, compute, volume, load-balancer; got %q", f.Service)
	}
	f.Method = strings.ToUpper(f.Method)
	if f.Path != "" {
		re, err := regexp.Compile(f.Path)
		if err != nil {
			return fmt.Errorf("path: %w", err)
		}
		f.re = re
	}
	return nil
}

func (f *Fault) matches(service, method, path, rawQuery string) bool {
	if f.Service != "" && f.Service != service {
		return false
	}
	if f.Method != "" && f.Method != method {
		return false
	}
	if f.re != nil && !f.re.MatchString(path) {
		return false
	}
	if f.Query != "" && !strings.Contains(rawQuery, f.Query) {
		return false
	}
	return true
}

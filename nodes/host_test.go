package nodes

import (
	"reflect"
	"testing"
)

// TestDownHosts: a host is down when at least min of the cluster's servers on it are unhealthy and none is
// healthy, while another host of the cluster has a healthy one.
func TestDownHosts(t *testing.T) {
	p := func(id, host string, bad bool) Placed { return Placed{Server: id, HostID: host, Unhealthy: bad} }
	for _, tc := range []struct {
		name string
		in   []Placed
		min  int
		want map[string][]string
	}{
		{"three of a host down, another host healthy", []Placed{p("c", "h1", true), p("a", "h1", true), p("b", "h1", true), p("d", "h2", false)}, 2,
			map[string][]string{"h1": {"a", "b", "c"}}},
		{"one unhealthy node on a host is no host failure", []Placed{p("a", "h1", true), p("b", "h2", false)}, 2, nil},
		{"a healthy node on the host: the host is alive", []Placed{p("a", "h1", true), p("b", "h1", true), p("c", "h1", false), p("d", "h2", false)}, 2, nil},
		{"every server on one host: the host is not told from the cluster", []Placed{p("a", "h1", true), p("b", "h1", true), p("c", "h1", false)}, 2, nil},
		{"every host down: an outage, not a host", []Placed{p("a", "h1", true), p("b", "h1", true), p("c", "h2", true), p("d", "h2", true)}, 2, nil},
		{"min 3", []Placed{p("a", "h1", true), p("b", "h1", true), p("d", "h2", false)}, 3, nil},
		{"min below 2 is taken as 2", []Placed{p("a", "h1", true), p("d", "h2", false)}, 1, nil},
		{"no hostId is no evidence", []Placed{p("a", "", true), p("b", "", true), p("d", "h2", false)}, 2, nil},
		{"two hosts down", []Placed{p("a", "h1", true), p("b", "h1", true), p("c", "h2", true), p("d", "h2", true), p("e", "h3", false)}, 2,
			map[string][]string{"h1": {"a", "b"}, "h2": {"c", "d"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DownHosts(tc.in, tc.min); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DownHosts = %v, want %v", got, tc.want)
			}
		})
	}
}

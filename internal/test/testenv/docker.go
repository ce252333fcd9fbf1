package testenv

import (
	"net"
	"strings"
	"testing"
)

// Docker returns the DOCKER_HOST value (unix:///...) of the private test Docker engine. It skips t (fails it
// when VITALS_TESTENV_REQUIRED=1) when the engine is not available.
func Docker(t testing.TB) string {
	t.Helper()
	short(t, "Docker test")
	s := load()
	s.checkFile(t)
	v, from := s.group(EnvDockerHost, EnvDockerHost)
	host := v[EnvDockerHost]
	if host == "" {
		unavailable(t, "Docker not available: %s (%s unset)", makeHint, EnvDockerHost)
	}
	if sock, ok := strings.CutPrefix(host, "unix://"); ok {
		c, err := net.DialTimeout("unix", sock, reachabilityTimout)
		if err != nil {
			unavailable(t, "Docker not available at %s (from %s): %v; %s", host, from, err, makeHint)
		}
		c.Close()
	}
	return host
}

package cloudsim

import (
	"crypto/sha256"
	"encoding/hex"
)

// DefaultHost is the compute host of a server seeded or created without one.
const DefaultHost = "sim-compute"

// host is the compute host v runs on.
func (v *server) host() string {
	if v.Host == "" {
		return DefaultHost
	}
	return v.Host
}

// hostID is what Nova shows a project of a server's host (the hostId of a server's view): the SHA-224 of the
// project's ID and the host's name, in hex, so that a project tells its servers' hosts apart, and which of its
// servers share one, without learning the host's name.
func hostID(project, host string) string {
	if host == "" {
		return ""
	}
	sum := sha256.Sum224([]byte(project + host))
	return hex.EncodeToString(sum[:])
}

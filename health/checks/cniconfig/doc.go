// Package cniconfig holds a check that a CNI configuration directory (by default /etc/cni/net.d) holds
// a network configuration that the container runtime can load: the first *.conf, *.conflist or *.json
// file in lexical order (the one containerd and CRI-O pick) must be JSON with cniVersion, name, and
// either type (a single plugin) or a non-empty plugins list whose entries each name a type.
package cniconfig

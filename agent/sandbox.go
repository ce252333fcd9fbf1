package agent

import "strings"

// SandboxFailure is the class of a FailedCreatePodSandBox Event: kubelet records that reason for every
// failure to create a pod's sandbox, of which a failed CNI ADD is only one kind.
type SandboxFailure string

// Sandbox failure classes.
const (
	// SandboxNetwork: the CNI plugin failed to set up (or the runtime failed to reach) the pod's network.
	SandboxNetwork SandboxFailure = "network"
	// SandboxImage: the sandbox (pause) image could not be pulled or found.
	SandboxImage SandboxFailure = "image"
	// SandboxRuntime: the container runtime failed otherwise (cgroups, mounts, the OCI runtime, names
	// already reserved, a full disk).
	SandboxRuntime SandboxFailure = "runtime"
	// SandboxOther: the message matched no known pattern.
	SandboxOther SandboxFailure = "other"
)

// sandboxPatterns map lower-cased substrings of kubelet's messages (containerd, CRI-O and the former
// dockershim) to classes, in order: the first match wins. Network patterns come first because a CNI
// error often quotes the runtime's words ("failed to create ... task") after its own.
var sandboxPatterns = []struct {
	substr string
	class  SandboxFailure
}{
	// containerd: `failed to setup network for sandbox "…": plugin type="calico" failed (add): …`
	{"failed to setup network for sandbox", SandboxNetwork},
	{"failed to set up network for sandbox", SandboxNetwork},
	// CRI-O: `error adding pod ns_name to CNI network "…": plugin type="…" failed (add): …`
	{"to cni network", SandboxNetwork},
	{"plugin type=", SandboxNetwork},
	// dockershim: `NetworkPlugin cni failed to set up pod "…" network: …`
	{"networkplugin cni failed", SandboxNetwork},
	{"failed to set up sandbox container", SandboxNetwork},
	// the runtime's CNI is not initialised (no configuration loaded yet)
	{"cni plugin not initialized", SandboxNetwork},
	{"failed to get sandbox image", SandboxImage},
	{"failed to pull image", SandboxImage},
	{"pull access denied", SandboxImage},
	{"errimagepull", SandboxImage},
	{"image not known", SandboxImage},
	{"failed to reserve sandbox name", SandboxRuntime},
	{"failed to create containerd task", SandboxRuntime},
	{"oci runtime", SandboxRuntime},
	{"cgroup", SandboxRuntime},
	{"no space left on device", SandboxRuntime},
	{"failed to mount", SandboxRuntime},
	{"seccomp", SandboxRuntime},
}

// ClassifySandboxFailure says what kind of failure a FailedCreatePodSandBox message describes. Only
// SandboxNetwork failures count against the CNI: a missing pause image or a full disk is not the pod
// network's fault.
func ClassifySandboxFailure(message string) SandboxFailure {
	m := strings.ToLower(message)
	for _, p := range sandboxPatterns {
		if strings.Contains(m, p.substr) {
			return p.class
		}
	}
	return SandboxOther
}

package agent

import "testing"

func TestClassifySandboxFailure(t *testing.T) {
	tests := []struct {
		msg  string
		want SandboxFailure
	}{
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "0a1b": plugin type="calico" failed (add): error getting ClusterInformation: connection is unauthorized`, SandboxNetwork},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create pod network sandbox k8s_web-0_default_1234_0(0a1b): error adding pod default_web-0 to CNI network "k8s-pod-network": plugin type="kuryr-cni" failed (add): no IP addresses available`, SandboxNetwork},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = [failed to set up sandbox container "0a1b" network for pod "web-0": networkPlugin cni failed to set up pod "web-0_default" network: open /run/flannel/subnet.env: no such file or directory]`, SandboxNetwork},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "0a1b": cni plugin not initialized`, SandboxNetwork},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image "registry.k8s.io/pause:3.10": failed to pull image "registry.k8s.io/pause:3.10": i/o timeout`, SandboxImage},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to reserve sandbox name "web-0_default_1234_0": name "web-0_default_1234_0" is reserved for "0a1b"`, SandboxRuntime},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to apply cgroup configuration`, SandboxRuntime},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container: mkdir /var/lib/containerd/...: no space left on device`, SandboxRuntime},
		{`Failed to create pod sandbox: rpc error: code = DeadlineExceeded desc = context deadline exceeded`, SandboxOther},
		{``, SandboxOther},
	}
	for _, tt := range tests {
		if got := ClassifySandboxFailure(tt.msg); got != tt.want {
			t.Errorf("ClassifySandboxFailure(%.60q...) = %s, want %s", tt.msg, got, tt.want)
		}
	}
}

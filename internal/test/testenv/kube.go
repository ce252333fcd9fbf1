package testenv

import (
	"net/url"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigPath returns the kubeconfig of the shared test kube-apiserver (token of group system:masters).
// It skips t (fails it when VITALS_TESTENV_REQUIRED=1) when the apiserver is not available.
func KubeconfigPath(t testing.TB) string {
	t.Helper()
	short(t, "kube-apiserver test")
	s := load()
	s.checkFile(t)
	vals, from := s.group(EnvKubeconfig, EnvKubeconfig)
	path := vals[EnvKubeconfig]
	if path == "" {
		unavailable(t, "kube-apiserver not available: %s (%s unset)", makeHint, EnvKubeconfig)
	}
	if _, err := os.Stat(path); err != nil {
		unavailable(t, "kube-apiserver not available: kubeconfig %s (from %s): %v; %s", path, from, err, makeHint)
	}
	return path
}

// Kube returns a client configuration for the shared test kube-apiserver. Each call returns a new copy that the
// caller may change. Never stop or reconfigure the shared apiserver from a test: use PrivateKube for that.
func Kube(t testing.TB) *rest.Config {
	t.Helper()
	path := KubeconfigPath(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", path, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("kubeconfig %s: server %q: %v", path, cfg.Host, err)
	}
	if err := reachable(u.Host); err != nil {
		unavailable(t, "kube-apiserver not available at %s (kubeconfig %s): %v; %s", cfg.Host, path, err, makeHint)
	}
	// Tests create many objects quickly; client-go's default 5 QPS would only slow them down.
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// InlineKubeconfig returns the kubeconfig at path (KubeconfigPath, or a KubeServer's) with every file it
// names inlined (certificate-authority-data ...), as a kubeconfig Secret holds it.
func InlineKubeconfig(t testing.TB, path string) []byte {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", path, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		t.Fatalf("inline the files of kubeconfig %s: %v", path, err)
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatalf("write kubeconfig %s: %v", path, err)
	}
	return b
}

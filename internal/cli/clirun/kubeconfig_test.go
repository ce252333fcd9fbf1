package clirun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/base/bounded"
)

func TestKubeconfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "key.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := func(key string) string {
		return `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.pem}}]
users: [{name: u, user: {client-certificate: cert.pem, client-key: ` + key + `}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	}
	write("ca.pem", "ca")
	write("cert.pem", "cert")
	write("key.pem", "key")
	good := write("good.yaml", kubeconfig("key.pem"))
	cfg, err := KubeconfigFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.CAFile != filepath.Join(dir, "ca.pem") || cfg.KeyFile != filepath.Join(dir, "key.pem") {
		t.Fatalf("config: host %q, CA %q, key %q; want the relative paths resolved against %s", cfg.Host, cfg.CAFile, cfg.KeyFile, dir)
	}
	for _, tc := range []struct {
		name, path string
		want       error
		says       string
	}{
		{"the kubeconfig a directory", dir, bounded.ErrNotRegular, "a directory"},
		{"the kubeconfig /dev/zero", "/dev/zero", bounded.ErrNotRegular, "a character device"},
		{"its key a named pipe", write("fifo.yaml", kubeconfig(fifo)), bounded.ErrNotRegular, "user u: " + fifo + ": not a regular file (a named pipe"},
	} {
		_, err := KubeconfigFile(tc.path)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Fatalf("%s: KubeconfigFile = %v; want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}
	// KUBECONFIG's files are checked before client-go reads them; a missing one is skipped.
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: []string{filepath.Join(dir, "missing"), good, "/dev/zero"}}
	if _, err := Kubeconfig(rules); !errors.Is(err, bounded.ErrNotRegular) || !strings.Contains(err.Error(), "/dev/zero") {
		t.Fatalf("Kubeconfig(KUBECONFIG with /dev/zero) = %v; want /dev/zero refused", err)
	}
	rules = &clientcmd.ClientConfigLoadingRules{Precedence: []string{filepath.Join(dir, "missing"), good}}
	if cfg, err := Kubeconfig(rules); err != nil || cfg.KeyFile != filepath.Join(dir, "key.pem") {
		t.Fatalf("Kubeconfig(KUBECONFIG) = %+v, %v", cfg, err)
	}
}

const twoContexts = `apiVersion: v1
kind: Config
clusters:
  - {name: mgmt, cluster: {server: "https://mgmt.example:6443"}}
  - {name: dev, cluster: {server: "https://dev.example:6443"}}
users: [{name: u, user: {token: t}}]
contexts:
  - {name: mgmt, context: {cluster: mgmt, user: u}}
  - {name: dev, context: {cluster: dev, user: u}}
current-context: dev
`

// TestLoadKubeconfig: --context picks the kubeconfig's context; a context it lacks is a --context error
// listing the ones it has; a missing file names the file.
func TestLoadKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ context, host, err string }{
		{"", "https://dev.example:6443", ""},
		{"mgmt", "https://mgmt.example:6443", ""},
		{"prod", "", `"prod" (its contexts: dev, mgmt)`},
	} {
		c, err := LoadKubeconfig(path, tc.context)
		switch {
		case tc.err != "":
			var cerr *config.Error
			if !errors.As(err, &cerr) || cerr.Field != "--context" || !errors.Is(err, ErrNoContext) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
				t.Errorf("context %q: %v, want a --context error saying %q and naming %s", tc.context, err, tc.err, path)
			}
		case err != nil || c.Host != tc.host:
			t.Errorf("context %q: %v, host %v; want %s", tc.context, err, c, tc.host)
		}
	}
	if names, err := KubeconfigContexts(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}); err != nil || strings.Join(names, ",") != "dev,mgmt" {
		t.Errorf("contexts: %v %v", names, err)
	}
	absent := filepath.Join(t.TempDir(), "absent")
	var cerr *config.Error
	if _, err := LoadKubeconfig(absent, ""); !errors.As(err, &cerr) || cerr.Field != "--kubeconfig" || !strings.Contains(err.Error(), absent) {
		t.Errorf("an absent kubeconfig: %v, want a --kubeconfig error naming it", err)
	}
}

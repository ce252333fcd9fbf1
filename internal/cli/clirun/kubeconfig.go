package clirun

import (
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/vitalsproject/vitals/internal/bounded"
)

// KubeconfigFile loads the kubeconfig at path: Kubeconfig with that one file.
func KubeconfigFile(path string) (*rest.Config, error) {
	return Kubeconfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path})
}

// Kubeconfig loads the client configuration of rules as client-go's deferred loading does (the explicit
// path, else KUBECONFIG's files merged, else ~/.kube/config; in-cluster when they hold nothing), with every
// file checked by bounded.Check before anything opens it: the kubeconfig files, then the files they name
// (certificate authority, client certificate and key, token file), which client-go opens to validate the
// configuration. A named pipe there used to hang the command, /dev/zero to fill its memory.
func Kubeconfig(rules *clientcmd.ClientConfigLoadingRules) (*rest.Config, error) {
	paths := rules.GetLoadingPrecedence()
	if rules.ExplicitPath != "" {
		paths = []string{rules.ExplicitPath}
	}
	for _, p := range paths {
		if err := bounded.Check(p, bounded.ConfigSize); err != nil && (rules.ExplicitPath != "" || !errors.Is(err, fs.ErrNotExist)) {
			return nil, err
		}
	}
	kc, err := rules.Load()
	if err != nil {
		return nil, err
	}
	if rules.ExplicitPath == "" && clientcmdapi.IsConfigEmpty(kc) {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, CheckRESTFiles(cfg)
		}
	}
	for name, c := range kc.Clusters {
		if err := checkReferences("cluster "+name, clientcmd.GetClusterFileReferences(c)); err != nil {
			return nil, err
		}
	}
	for name, a := range kc.AuthInfos {
		if err := checkReferences("user "+name, clientcmd.GetAuthInfoFileReferences(a)); err != nil {
			return nil, err
		}
	}
	return clientcmd.NewNonInteractiveClientConfig(*kc, "", &clientcmd.ConfigOverrides{}, rules).ClientConfig()
}

func checkReferences(what string, refs []*string) error {
	for _, r := range refs {
		if r == nil || *r == "" {
			continue
		}
		if err := bounded.Check(*r, bounded.CertSize); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// CheckRESTFiles checks the files a client configuration names, which client-go reads when it connects
// (the CA bundle, the client certificate and key, the token file), with bounded.Check.
func CheckRESTFiles(cfg *rest.Config) error {
	for _, f := range []struct{ what, path string }{
		{"certificate-authority", cfg.CAFile}, {"client-certificate", cfg.CertFile}, {"client-key", cfg.KeyFile},
		{"tokenFile", cfg.BearerTokenFile},
	} {
		if f.path == "" {
			continue
		}
		if err := bounded.Check(f.path, bounded.CertSize); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", f.what, err)
		}
	}
	return nil
}

package clirun

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/base/bounded"
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
	return KubeconfigContext(rules, "")
}

// ErrNoContext is wrapped by KubeconfigContext's error for a context the kubeconfig does not have.
var ErrNoContext = errors.New("no context")

// loadBounded is rules.Load with every kubeconfig file checked by bounded.Check first.
func loadBounded(rules *clientcmd.ClientConfigLoadingRules) (*clientcmdapi.Config, error) {
	paths := rules.GetLoadingPrecedence()
	if rules.ExplicitPath != "" {
		paths = []string{rules.ExplicitPath}
	}
	for _, p := range paths {
		if err := bounded.Check(p, bounded.ConfigSize); err != nil && (rules.ExplicitPath != "" || !errors.Is(err, fs.ErrNotExist)) {
			return nil, err
		}
	}
	return rules.Load()
}

// KubeconfigContexts lists the contexts of the kubeconfig of rules, sorted (for --context's completion).
func KubeconfigContexts(rules *clientcmd.ClientConfigLoadingRules) ([]string, error) {
	kc, err := loadBounded(rules)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(kc.Contexts))
	for name := range kc.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// KubeconfigContext is Kubeconfig with the context context (kubectl's --context; "": the current-context).
// A context the kubeconfig does not have is an error wrapping ErrNoContext that lists the ones it has.
func KubeconfigContext(rules *clientcmd.ClientConfigLoadingRules, context string) (*rest.Config, error) {
	kc, err := loadBounded(rules)
	if err != nil {
		return nil, err
	}
	if context != "" && kc.Contexts[context] == nil {
		names := make([]string, 0, len(kc.Contexts))
		for name := range kc.Contexts {
			names = append(names, name)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w %q (its contexts: %s); list them with kubectl config get-contexts", ErrNoContext, context, strings.Join(names, ", "))
	}
	if context == "" && rules.ExplicitPath == "" && clientcmdapi.IsConfigEmpty(kc) {
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
	return clientcmd.NewNonInteractiveClientConfig(*kc, context, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
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

// LoadKubeconfig reads the client configuration of a kubeconfig (the file given, else KUBECONFIG or
// ~/.kube/config) and context (empty: its current-context), as KubeconfigContext does, for a command's
// --kubeconfig and --context: its *config.Error names the flag, the file and, for a context the file does
// not have, the contexts it has.
func LoadKubeconfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	c, err := KubeconfigContext(rules, context)
	if err == nil {
		return c, nil
	}
	where := kubeconfig
	if where == "" {
		where = strings.Join(rules.GetLoadingPrecedence(), ":")
	}
	if errors.Is(err, ErrNoContext) {
		return nil, &config.Error{Field: "--context", Msg: fmt.Sprintf("kubeconfig %s: %v", where, err), Err: err}
	}
	return nil, &config.Error{File: kubeconfig, Field: "--kubeconfig", Msg: fmt.Sprintf("read kubeconfig %s: %s", where, strings.TrimSpace(err.Error())), Err: err}
}

// AddContextFlag adds kubectl's --context to cmd, bound to context, completing the contexts of the
// kubeconfig *kubeconfig names (else KUBECONFIG or ~/.kube/config).
func AddContextFlag(cmd *cobra.Command, context, kubeconfig *string) {
	AddContextFlagNamed(cmd, "context", "context of the kubeconfig to use (default: its current-context)", context, kubeconfig)
}

// AddContextFlagNamed is AddContextFlag for a flag of another name and usage (`vitals deorbit
// --management-context`, the context of its second kubeconfig).
func AddContextFlagNamed(cmd *cobra.Command, name, usage string, context, kubeconfig *string) {
	cmd.Flags().StringVar(context, name, "", usage)
	Must(cmd, name, cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = *kubeconfig
		names, err := KubeconfigContexts(rules)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}))
}

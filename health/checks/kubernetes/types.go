package kubernetes

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/health/checktype"
)

// Types declares this package's check types for the check registry. They link client-go, so only
// commands that already do (vitals serve) add them; the container healthcheck does not.
func Types() []checktype.Type {
	return []checktype.Type{{
		Name: "kubernetes", Timeout: 5 * time.Second,
		Doc: "the Kubernetes API server's `/readyz` answers ok; otherwise the checks it lists as failed are named (at most one request per 5s)",
		Options: []checktype.Option{
			{Name: "kubeconfig", Arg: "FILE", Doc: "kubeconfig of the cluster (empty: the in-cluster service account)"},
		},
		New: func(v *checktype.Values) (checks.Func, error) {
			cfg, err := restConfig(v.String("kubeconfig"))
			if err != nil {
				return nil, err
			}
			rc, err := RESTClientFor(cfg)
			if err != nil {
				return nil, err
			}
			return Readyz(ReadyzOptions{Client: rc})
		},
	}}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig given and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

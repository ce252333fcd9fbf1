package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/vitalsproject/vitals/health/checks"
)

// RESTClientFor builds, once, the plain REST client that Readyz uses from a client configuration. It
// knows no API group (only metav1's Status, to read error answers), so that a process that needs no
// more, such as the node agent, does not link client-go's clientset.
func RESTClientFor(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath, c.GroupVersion = "", nil
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("build a REST client for %s: %w", cfg.Host, err)
	}
	return rc, nil
}

// ReadyzOptions configure Readyz.
type ReadyzOptions struct {
	Options
	// Client is the API server's REST client (required): RESTClientFor builds one.
	Client rest.Interface
}

// Readyz checks the API server's GET /readyz (etcd reachable, informers synced, ...). On failure it
// reports the checks the API server lists as failed.
func Readyz(opts ReadyzOptions) (checks.Func, error) {
	client := opts.Client
	if client == nil {
		return nil, errors.New("kube-apiserver /readyz check: no Client")
	}
	co := opts.coalescer()
	return func(ctx context.Context) error {
		return co.Do(ctx, func(ctx context.Context) error {
			body, err := client.Get().AbsPath("/readyz").Do(ctx).Raw()
			if err != nil {
				if failed := failedLines(string(body)); failed != "" {
					return fmt.Errorf("kube-apiserver /readyz: %s", failed)
				}
				return fmt.Errorf("kube-apiserver /readyz: %w", err)
			}
			if s := strings.TrimSpace(string(body)); s != "ok" {
				return fmt.Errorf("kube-apiserver /readyz answered %q, expected ok", truncate(s, 200))
			}
			return nil
		})
	}, nil
}

// failedLines extracts the "[-]name failed: ..." lines of a health answer.
func failedLines(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "[-]") {
			out = append(out, strings.TrimPrefix(l, "[-]"))
		}
	}
	return strings.Join(out, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/vitalsproject/vitals/health/checks"
)

// NamespaceLister lists and watches Namespaces: client-go's CoreV1().Namespaces() is one.
type NamespaceLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.NamespaceList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ListWatchOptions configure ListWatch.
type ListWatchOptions struct {
	Options
	// Namespaces lists and watches Namespaces (required): client-go's CoreV1().Namespaces().
	Namespaces NamespaceLister
	// Namespace whose Namespace object is listed and watched ("": "default"). One object, so
	// the check costs the same in any cluster.
	Namespace string
	// WatchTimeout is how long the watch stays open (0: 1s); the API server ends it then.
	WatchTimeout time.Duration
}

// ListWatch checks what an informer does: a list (here of one Namespace, by field selector), then a
// watch from the list's resourceVersion that must run until the server closes it without an error
// event (an expired or too-large resourceVersion, a broken watch cache, a proxy that cuts streams).
func ListWatch(opts ListWatchOptions) (checks.Func, error) {
	namespaces := opts.Namespaces
	if namespaces == nil {
		return nil, errors.New("list+watch check: no Namespaces client")
	}
	if opts.WatchTimeout < 0 {
		return nil, fmt.Errorf("list+watch check: WatchTimeout %s: expected 0 (1s) or more", opts.WatchTimeout)
	}
	co := opts.coalescer()
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	timeout := int64(1)
	if opts.WatchTimeout > 0 {
		timeout = max(1, int64(opts.WatchTimeout/time.Second))
	}
	sel := fields.OneTermEqualSelector("metadata.name", ns).String()
	return func(ctx context.Context) error {
		return co.Do(ctx, func(ctx context.Context) error {
			list, err := namespaces.List(ctx, metav1.ListOptions{FieldSelector: sel, Limit: 1})
			if err != nil {
				return fmt.Errorf("list namespace %s: %w", ns, err)
			}
			w, err := namespaces.Watch(ctx, metav1.ListOptions{FieldSelector: sel,
				ResourceVersion: list.ResourceVersion, TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
			if err != nil {
				return fmt.Errorf("watch namespace %s from resourceVersion %s: %w", ns, list.ResourceVersion, err)
			}
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return fmt.Errorf("watch namespace %s: %w", ns, ctx.Err())
				case ev, ok := <-w.ResultChan():
					if !ok {
						return nil // the server ended the watch at its timeout: it worked
					}
					if ev.Type == watch.Error {
						return fmt.Errorf("watch namespace %s: %w", ns, apierrors.FromObject(ev.Object))
					}
				}
			}
		})
	}, nil
}

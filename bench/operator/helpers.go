package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/benchproc"
)

// cleanup drops the finalizers the operators set on the VitalsClusters of ns, then deletes ns.
func cleanup(ctx context.Context, o options, c client.Client, ns string, list v1alpha1.VitalsClusterList) {
	if err := parallel(ctx, o.workers, len(list.Items), func(i int) error {
		vc := &list.Items[i]
		if len(vc.Finalizers) == 0 {
			return nil
		}
		patch := client.MergeFrom(vc.DeepCopy())
		vc.Finalizers = nil
		return client.IgnoreNotFound(c.Patch(ctx, vc, patch))
	}); err != nil {
		fmt.Fprintf(os.Stderr, "operator-bench: drop finalizers in %s: %v\n", ns, err)
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		fmt.Fprintf(os.Stderr, "operator-bench: delete namespace %s: %v\n", ns, err)
	}
}

// workersFlag passes -routegc-workers on to the operator when it is set.
func workersFlag(n int) []string {
	if n <= 0 {
		return nil
	}
	return []string{"--routegc-workers=" + strconv.Itoa(n)}
}

func clusterName(i int) string { return fmt.Sprintf("scale-%04d", i) }

func kubeClient(kubeconfig string) (client.Client, *rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, cfg, err
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, workers, n int, f func(int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

func freePort() (int, error) {
	ps, err := benchproc.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering after %s: %w", url, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func doJSON(ctx context.Context, method, url string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, body)
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

func postJSON(ctx context.Context, url string, in, out any) error {
	return doJSON(ctx, http.MethodPost, url, in, out)
}

func patchJSON(ctx context.Context, url string, in any) error {
	return doJSON(ctx, http.MethodPatch, url, in, nil)
}

func getJSONMap(ctx context.Context, url string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out, nil
}

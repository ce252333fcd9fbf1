package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// passWatch keeps the end time of every route pass of the VitalsClusters of one namespace, from one
// watch (an informer that keeps each cluster's name and last pass time only). Polling every cluster's
// status with lists instead cost the apiserver a list of every VitalsCluster every few seconds, as much
// as the operators measured (at 2000 clusters the driver's lists timed out on the loaded apiserver).
type passWatch struct {
	mu     sync.Mutex
	passes map[string][]time.Time // cluster -> end times of its passes, oldest first
}

// watchPasses starts the watch of ns and waits for its first list.
func watchPasses(ctx context.Context, kubeconfig, ns string) (*passWatch, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}},
		DefaultTransform: slimCluster})
	if err != nil {
		return nil, fmt.Errorf("VitalsCluster cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.VitalsCluster{})
	if err != nil {
		return nil, fmt.Errorf("VitalsCluster informer: %w", err)
	}
	pw := &passWatch{passes: map[string][]time.Time{}}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { pw.record(o) },
		UpdateFunc: func(_, o any) { pw.record(o) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("VitalsClusters of %s: the watch did not sync", ns)
	}
	return pw, nil
}

// slimCluster keeps what the driver reads of a VitalsCluster: its name and last route pass.
func slimCluster(in any) (any, error) {
	vc, ok := in.(*v1alpha1.VitalsCluster)
	if !ok {
		return in, nil
	}
	out := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: vc.Name, Namespace: vc.Namespace, UID: vc.UID,
		ResourceVersion: vc.ResourceVersion}}
	if rg := vc.Status.RouteGC; rg != nil && rg.LastPassTime != nil {
		out.Status.RouteGC = &v1alpha1.RouteGCStatus{LastPassTime: rg.LastPassTime}
	}
	return out, nil
}

func (p *passWatch) record(o any) {
	vc, ok := o.(*v1alpha1.VitalsCluster)
	if !ok || vc.Status.RouteGC == nil || vc.Status.RouteGC.LastPassTime == nil {
		return
	}
	t := vc.Status.RouteGC.LastPassTime.Time
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := p.passes[vc.Name]
	if len(ts) == 0 || ts[len(ts)-1].Before(t) {
		p.passes[vc.Name] = append(ts, t)
	}
}

// since is, per cluster, the end times of its passes at or after t (lastPassTime has a resolution of a
// second: t is truncated).
func (p *passWatch) since(t time.Time) map[string][]time.Time {
	t = t.Truncate(time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]time.Time, len(p.passes))
	for name, ts := range p.passes {
		for i, x := range ts {
			if !x.Before(t) {
				out[name] = append([]time.Time(nil), ts[i:]...)
				break
			}
		}
	}
	return out
}

// last is each cluster's last pass end time.
func (p *passWatch) last() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]time.Time, len(p.passes))
	for name, ts := range p.passes {
		out[name] = ts[len(ts)-1]
	}
	return out
}

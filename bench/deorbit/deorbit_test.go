package deorbit_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

var (
	flagPVCs    = flag.Int("deorbit.pvcs", 200, "PersistentVolumeClaims bound to Cinder CSI volumes")
	flagLBs     = flag.Int("deorbit.lbs", 50, "LoadBalancer Services with their Octavia load balancers")
	flagLatency = flag.Duration("deorbit.latency", 2*time.Second, "how long the simulated Cinder and Octavia take to delete")
	flagRound   = flag.Duration("deorbit.round-timeout", 10*time.Minute, "the longest one round may take (a stuck engine fails the bench)")
	flagLimits  = flag.Bool("deorbit.unlimited", false, "lift the client-side rate limits (the cloud's 10/s, the workload cluster's 20/s) to see the engine alone")
	flagBudget  = flag.Int("deorbit.budget", deorbit.DefaultBudget, "the most deletes one step issues (spec.controllers.deorbit.budget)")
	flagWorkers = flag.Int("deorbit.workers", deorbit.DefaultWorkers, "deletes and reads running at once (--deorbit-parallel-deletes)")
	flagWQPS    = flag.Float64("deorbit.workload-qps", workload.DefaultTeardownQPS, "requests per second of the teardown to the workload cluster (--workload-teardown-qps)")
	flagWBurst  = flag.Int("deorbit.workload-burst", workload.DefaultTeardownBurst, "request burst of the teardown to the workload cluster (--workload-teardown-burst)")
)

// project and user of the simulated cloud the cluster lives in.
const (
	project  = "bench"
	user     = "bench"
	password = "bench-secret"
)

// BenchmarkDeorbit deletes a cluster with 200 PVCs bound to Cinder CSI volumes and 50 LoadBalancer Services
// with Octavia load balancers: deorbit's engine, as the operator runs it (a step, then the next at the time
// the step asks for), against a real kube-apiserver (the workload cluster) and the simulator, whose Cinder
// and Octavia take 2 s to delete. The CSI provisioner and the cloud controller manager are played by the
// bench: they delete the volume of a deleted claim and the load balancer of a deleted Service at once.
// It reports the wall time from the first step to the release of the finalizer, and that time as a multiple
// of the cloud's own deletion latency (x-latency: 1.0 would be a single delete's wait).
func BenchmarkDeorbit(b *testing.B) {
	ctrllog.SetLogger(logr.Discard())
	kube := testenv.PrivateKube(b)
	ctx := b.Context()
	sim, err := cloudsim.New(cloudsim.Options{Seed: 13})
	if err != nil {
		b.Fatal(err)
	}
	if err := sim.UpdateKnobs(func(k *cloudsim.Knobs) {
		k.VolumeDeleteLatency = cloudsim.Duration(*flagLatency)
		k.LBDeleteLatency = cloudsim.Duration(*flagLatency)
	}); err != nil {
		b.Fatal(err)
	}
	if err := sim.Start(ctx, "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sim.Close() })
	if _, err := sim.CreateUser(user, password, false, sim.CreateProject(project)); err != nil {
		b.Fatal(err)
	}

	// The engine's clients, with the rate limits the operator gives them (or none).
	cloudQPS, lim := 0.0, workload.Limits{QPS: float32(*flagWQPS), Burst: *flagWBurst}
	if *flagLimits {
		cloudQPS, lim = -1, workload.Limits{QPS: 10000, Burst: 10000}
	}
	auth := openstack.Auth{Source: "cloudsim", Options: gophercloud.AuthOptions{IdentityEndpoint: sim.AuthURL(),
		Username: user, Password: password, DomainName: "Default", TenantName: project}}
	tl := &timeline{}
	cloud, err := openstack.Connect(ctx, openstack.Config{Auth: auth, QPS: cloudQPS, Transport: tl.cloud(http.DefaultTransport.(*http.Transport).Clone())})
	if err != nil {
		b.Fatal(err)
	}
	wcfg := kube.Config()
	wcfg.QPS, wcfg.Burst = lim.QPS, lim.Burst
	wcfg.Wrap(tl.kube)
	// The bench's own clients (fixtures, the stand-in controllers): unlimited.
	fast := kube.Config()
	fast.QPS, fast.Burst = -1, 0
	kc := kubernetes.NewForConfigOrDie(fast)
	provider, err := openstack.Connect(ctx, openstack.Config{Auth: auth, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	policy, err := remediation.New(remediation.Options{})
	if err != nil {
		b.Fatal(err)
	}

	var walls []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cluster := fmt.Sprintf("bench%d", i)
		// Each cluster has its own workload client, as in the operator (one per VitalsCluster, long
		// lived): its rate limiter starts full, its kinds are known before the deletion.
		wl := workloadClient(b, wcfg)
		fx := newFixture(b, sim, kc, cluster)
		rctx, cancel := context.WithTimeout(ctx, *flagRound)
		stop, cloudDeletes := standIns(rctx, b, kc, provider, fx)
		before := sim.Stats().Requests
		b.StartTimer()
		start := time.Now()
		tl.reset(start)
		st, steps := run(rctx, b, policy, cloud, wl, cluster, start)
		wall := time.Since(start)
		b.StopTimer()
		stop()
		cancel()
		left := sim.Stats()
		if st.Phase != v1alpha1.DeorbitPhaseDone || left.Volumes != 0 || left.LoadBalancers != 0 {
			b.Fatalf("after deorbit: phase %s, %d volumes and %d load balancers left; last error %q", st.Phase, left.Volumes, left.LoadBalancers, st.LastError)
		}
		walls = append(walls, wall)
		first, last := cloudDeletes()
		b.Logf("cluster %s: %d PVCs and %d load balancers gone in %s (%.2f× the %s delete latency), the stand-ins' cloud deletes began at %.2f–%.2fs, %d cloud API calls; %s; steps: %s",
			cluster, *flagPVCs, *flagLBs, wall.Round(time.Millisecond), float64(wall)/float64(*flagLatency), *flagLatency,
			first.Sub(start).Seconds(), last.Sub(start).Seconds(), left.Requests-before, tl, strings.Join(steps, ", "))
		fx.cleanup(b)
	}
	slices.Sort(walls)
	med := walls[len(walls)/2]
	b.ReportMetric(med.Seconds(), "s-wall")
	b.ReportMetric(float64(med)/float64(*flagLatency), "x-latency")
	b.ReportMetric(0, "ns/op")
}

// timeline records when the engine's requests went: its Kubernetes DELETEs (sent, answered) and its
// lists of the cloud (the wait's looks), in seconds since the round's start.
type timeline struct {
	mu                sync.Mutex
	start             time.Time
	deletes, reads    int
	firstDel, lastDel time.Duration // sent
	lastAnswer        time.Duration
	looks             []time.Duration
}

func (tl *timeline) reset(start time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.start, tl.deletes, tl.reads, tl.firstDel, tl.lastDel, tl.lastAnswer, tl.looks = start, 0, 0, 0, 0, 0, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// kube wraps the engine's transport to the workload cluster.
func (tl *timeline) kube(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodDelete {
			tl.mu.Lock()
			tl.reads++
			tl.mu.Unlock()
			return rt.RoundTrip(r)
		}
		tl.mu.Lock()
		sent := time.Since(tl.start)
		if tl.deletes == 0 {
			tl.firstDel = sent
		}
		tl.deletes++
		tl.lastDel = max(tl.lastDel, sent)
		tl.mu.Unlock()
		resp, err := rt.RoundTrip(r)
		tl.mu.Lock()
		tl.lastAnswer = max(tl.lastAnswer, time.Since(tl.start))
		tl.mu.Unlock()
		return resp, err
	})
}

// cloud wraps the engine's transport to the cloud: the lists of volumes and load balancers are the looks.
func (tl *timeline) cloud(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/volumes/detail") {
			tl.mu.Lock()
			tl.looks = append(tl.looks, time.Since(tl.start))
			tl.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (tl *timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	looks := make([]string, len(tl.looks))
	for i, l := range tl.looks {
		looks[i] = fmt.Sprintf("%.2f", l.Seconds())
	}
	return fmt.Sprintf("%d Kubernetes DELETEs sent %.2f–%.2fs, the last answered at %.2fs, and %d other requests; cloud lists at %s s",
		tl.deletes, tl.firstDel.Seconds(), tl.lastDel.Seconds(), tl.lastAnswer.Seconds(), tl.reads, strings.Join(looks, " "))
}

// workloadClient is a cluster's workload client with the kinds deorbit reads already mapped (the
// operator's is long lived), through one token bucket of the configuration's QPS and Burst for all its
// requests, as the operator's (workload.Limits).
func workloadClient(b *testing.B, cfg *rest.Config) client.Client {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	wl, err := client.New(cfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	snaps := &unstructured.UnstructuredList{}
	snaps.SetGroupVersionKind(deorbit.VolumeSnapshotList)
	for _, l := range []client.ObjectList{&corev1.PersistentVolumeList{}, &corev1.ServiceList{}, snaps} {
		if err := wl.List(b.Context(), l, client.Limit(1)); err != nil && !meta.IsNoMatchError(err) {
			b.Fatal(err)
		}
	}
	return wl
}

// run steps the engine until it releases the finalizer, waiting between steps as the controller requeues. It
// returns the final status and a line per step: when it started (since start), how long it took, the phase it
// ended in, and when it asked to come back.
func run(ctx context.Context, b *testing.B, policy *remediation.Engine, cloud deorbit.Cloud, wl client.Client, cluster string, start time.Time) (*v1alpha1.DeorbitStatus, []string) {
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: cluster}}
	eng := &deorbit.Engine{Workers: *flagWorkers}
	st := &v1alpha1.DeorbitStatus{}
	in := deorbit.Input{
		Target: deorbit.Target{Key: "bench/" + cluster, ClusterName: cluster},
		Settings: deorbit.Settings{GiveUpAfter: time.Hour, UnreachableGracePeriod: deorbit.DefaultUnreachableGracePeriod,
			CloudWaitTimeout: deorbit.DefaultCloudWaitTimeout, Budget: *flagBudget},
		Workload: wl, Cloud: cloud,
	}
	var steps []string
	for {
		began := time.Now()
		in.Policy = policy.Begin(ctx, vc, deorbit.Name, nil, remediation.Scope{})
		res := eng.Step(ctx, in, st)
		line := fmt.Sprintf("%.1fs+%.1fs %s", began.Sub(start).Seconds(), time.Since(began).Seconds(), st.Phase)
		if res.Err != nil {
			b.Logf("step at %s: %v", line, res.Err)
		}
		if res.Release {
			return st, append(steps, line)
		}
		steps = append(steps, fmt.Sprintf("%s (next in %.1fs)", line, time.Until(res.Next).Seconds()))
		select {
		case <-ctx.Done():
			b.Fatalf("round of cluster %s: %v after %s; phase %s, counts %+v, last error %q; steps: %s", cluster, ctx.Err(),
				time.Since(start).Round(time.Millisecond), st.Phase, st.Counts, st.LastError, strings.Join(steps, ", "))
		case <-time.After(time.Until(res.Next)):
		}
	}
}

// fixture is one cluster's objects on both sides.
type fixture struct {
	kc        kubernetes.Interface
	namespace string
	volumeOf  map[string]string // PV name -> Cinder volume ID
}

// newFixture seeds the cloud (volumes with the Cinder CSI metadata, load balancers named and tagged by the
// cloud controller manager, with a listener and a pool) and the workload cluster (each volume's PV bound to
// a claim, each load balancer's LoadBalancer Service with its ID annotation).
func newFixture(b *testing.B, sim *cloudsim.Sim, kc kubernetes.Interface, cluster string) *fixture {
	ctx := b.Context()
	seeded, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: project, Name: cluster, Volumes: *flagPVCs, LoadBalancers: *flagLBs})
	if err != nil {
		b.Fatal(err)
	}
	fx := &fixture{kc: kc, namespace: cluster, volumeOf: map[string]string{}}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	parallel(b, len(seeded.Volumes), func(j int) error {
		name := fmt.Sprintf("data-%d", j)
		pvName := fmt.Sprintf("pv-%s-%d", cluster, j)
		size := resource.MustParse("1Gi")
		pvc, err := kc.CoreV1().PersistentVolumeClaims(cluster).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				VolumeName: pvName, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		pv, err := kc.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pvName},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: cluster, Name: name, UID: pvc.UID},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: ccm.CinderCSIDriver, VolumeHandle: seeded.Volumes[j]}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		pv.Status.Phase = corev1.VolumeBound
		if _, err := kc.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
		pvc.Status.Phase = corev1.ClaimBound
		_, err = kc.CoreV1().PersistentVolumeClaims(cluster).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
		return err
	})
	for j, id := range seeded.Volumes {
		fx.volumeOf[fmt.Sprintf("pv-%s-%d", cluster, j)] = id
	}
	// SeedCluster names the load balancers kube_service_<cluster>_default_svc<j>: the Services are default/svc<j>.
	parallel(b, len(seeded.LoadBalancers), func(j int) error {
		_, err := kc.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc%d", j),
				Annotations: map[string]string{ccm.AnnotationLoadBalancerID: seeded.LoadBalancers[j]}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		return err
	})
	return fx
}

// cleanup removes what the stand-ins leave of the workload side, so the next round starts from nothing.
func (fx *fixture) cleanup(b *testing.B) {
	ctx := b.Context()
	if err := fx.kc.CoreV1().Namespaces().Delete(ctx, fx.namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	for pv := range fx.volumeOf {
		_ = releasePV(ctx, fx.kc, pv)
	}
}

// standIns plays the Cinder CSI provisioner and the OpenStack cloud controller manager until stop: a claim
// being deleted loses its protection finalizer, its volume is deleted in Cinder and its PV goes; a deleted
// LoadBalancer Service's load balancer is deleted in Octavia (with cascade). Each reacts at once. deletes
// says when the first and the last of their cloud deletes began.
func standIns(ctx context.Context, b *testing.B, kc kubernetes.Interface, cloud *openstack.Cloud, fx *fixture) (stop func(), deletes func() (first, last time.Time)) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	bc, err := cloud.Client(openstack.ServiceBlockStorage)
	if err != nil {
		b.Fatal(err)
	}
	lc, err := cloud.Client(openstack.ServiceLoadBalancer)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	handled := map[types.UID]bool{}
	var first, last time.Time
	began := func() {
		mu.Lock()
		defer mu.Unlock()
		last = time.Now()
		if first.IsZero() {
			first = last
		}
	}
	once := func(uid types.UID) bool {
		mu.Lock()
		defer mu.Unlock()
		if handled[uid] {
			return false
		}
		handled[uid] = true
		return true
	}
	react := func(what string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				b.Errorf("%s: %v", what, err)
			}
		}()
	}
	// Watches that start again where they were when the server ends them (a burst of deletes may).
	pvcList, err := kc.CoreV1().PersistentVolumeClaims(fx.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pvcs, err := watchtools.NewRetryWatcherWithContext(ctx, pvcList.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return kc.CoreV1().PersistentVolumeClaims(fx.namespace).Watch(ctx, o)
		}})
	if err != nil {
		b.Fatal(err)
	}
	svcList, err := kc.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	svcs, err := watchtools.NewRetryWatcherWithContext(ctx, svcList.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return kc.CoreV1().Services("default").Watch(ctx, o)
		}})
	if err != nil {
		b.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-pvcs.ResultChan():
				if !ok {
					return
				}
				pvc, isPVC := ev.Object.(*corev1.PersistentVolumeClaim)
				if !isPVC || pvc.DeletionTimestamp == nil && ev.Type != watch.Deleted || !once(pvc.UID) {
					continue
				}
				react("provisioner "+pvc.Name, func(ctx context.Context) error {
					if len(pvc.Finalizers) > 0 {
						patch := []byte(`{"metadata":{"finalizers":null}}`)
						if _, err := kc.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
							return err
						}
					}
					began()
					err := volumes.Delete(ctx, bc, fx.volumeOf[pvc.Spec.VolumeName], nil).ExtractErr()
					if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
						return err
					}
					return releasePV(ctx, kc, pvc.Spec.VolumeName)
				})
			case ev, ok := <-svcs.ResultChan():
				if !ok {
					return
				}
				svc, isSvc := ev.Object.(*corev1.Service)
				if !isSvc || svc.DeletionTimestamp == nil && ev.Type != watch.Deleted || !once(svc.UID) {
					continue
				}
				react("cloud controller manager "+svc.Name, func(ctx context.Context) error {
					id := svc.Annotations[ccm.AnnotationLoadBalancerID]
					began()
					err := loadbalancers.Delete(ctx, lc, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
					if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) && !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
						return err
					}
					return nil
				})
			}
		}
	}()
	stop = func() {
		cancel()
		pvcs.Stop()
		svcs.Stop()
		<-pvcs.Done()
		<-svcs.Done()
		wg.Wait()
	}
	deletes = func() (time.Time, time.Time) {
		mu.Lock()
		defer mu.Unlock()
		return first, last
	}
	return stop, deletes
}

// releasePV deletes a PV, without its protection finalizer.
func releasePV(ctx context.Context, kc kubernetes.Interface, name string) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := kc.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err := kc.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// parallel runs f(0..n-1), 16 at a time, failing b on the first error.
func parallel(b *testing.B, n int, f func(int) error) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make([]error, n)
	for j := 0; j < n; j++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[j] = f(j)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

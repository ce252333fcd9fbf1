package operator

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// BenchmarkCachedCluster measures the heap one VitalsCluster holds in the informer cache, decoded as the
// informer decodes it, as the API server sends it and after stripUnread (docs/benchmarks.md, issue 17).
// testdata/vitalscluster.json is a cluster of bench/operator after a few passes of every controller.
//
//	go test ./operator/ -run '^$' -bench BenchmarkCachedCluster -benchtime 3x
func BenchmarkCachedCluster(b *testing.B) {
	raw, err := os.ReadFile("testdata/vitalscluster.json")
	if err != nil {
		b.Fatal(err)
	}
	dec := serializer.NewCodecFactory(Scheme()).UniversalDeserializer()
	const n = 2000
	for _, strip := range []bool{false, true} {
		b.Run(fmt.Sprintf("strip=%v", strip), func(b *testing.B) {
			for b.Loop() {
				keep := make([]*v1alpha1.VitalsCluster, n)
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				for i := range keep {
					obj, _, err := dec.Decode(raw, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if strip {
						if _, err := stripUnread(obj); err != nil {
							b.Fatal(err)
						}
					}
					keep[i] = obj.(*v1alpha1.VitalsCluster)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "heap-B/cluster")
				runtime.KeepAlive(keep)
			}
		})
	}
}

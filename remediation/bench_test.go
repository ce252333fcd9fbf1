package remediation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// BenchmarkPass: one pass over one of 1000 clusters that each spent their budget of 10 actions: Begin,
// one Ask (held by the cluster's budget after the operator-wide count), Apply.
func BenchmarkPass(b *testing.B) {
	clk := clocktesting.NewFakeClock(t0)
	checks := NewChecks(clk)
	e, err := New(Options{Limits: &Limits{Actions: 1_000_000, Window: time.Hour}, Checks: checks, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	clusters := make([]*v1alpha1.VitalsCluster, 1000)
	for i := range clusters {
		c := newCluster(func(c *v1alpha1.VitalsCluster) { c.Name = fmt.Sprintf("c%d", i) })
		checks.Set(types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, CheckCloud, nil)
		p := e.Begin(ctx, c, "routegc", []string{CheckCloud}, Scope{Total: 20, Unhealthy: 1})
		for j := range 10 {
			p.Ask(ctx, proven(j+1))
		}
		p.Apply(&c.Status)
		clusters[i] = c
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c := clusters[i%len(clusters)]
		p := e.Begin(ctx, c, "routegc", []string{CheckCloud}, Scope{Total: 20, Unhealthy: 1})
		if d := p.Ask(ctx, proven(11)); d.Reason != ReasonBudget {
			b.Fatalf("%+v", d)
		}
		c.Status.RouteGC = nil
		p.Apply(&c.Status)
	}
}

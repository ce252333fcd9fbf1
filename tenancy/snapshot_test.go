package tenancy

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// countingReader counts the lists of a reader and fails them while fail is set.
type countingReader struct {
	client.Reader
	lists int
	fail  bool
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists++
	if r.fail {
		return errors.New("the API server is down")
	}
	return r.Reader.List(ctx, list, opts...)
}

// The overlap rule's list serves for ClustersMaxAge, then is read again; a failed list is an error and
// keeps nothing; each cluster is kept with what the rule reads only; with no age each resolution lists.
func TestClusterSnapshot(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	a := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "a", Annotations: map[string]string{"x": "y"}},
		Spec: v1alpha1.ClusterSpec{PodCIDRs: []v1alpha1.CIDR{"10.1.0.0/16"}}}
	a.Status.ProjectID, a.Status.Conditions = "p", []metav1.Condition{{Type: "Ready"}}
	r := &countingReader{Reader: fake.NewClientBuilder().WithScheme(s).WithObjects(a).WithStatusSubresource(a).Build()}
	if err := r.Reader.(client.Client).Status().Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	var snap clusterSnapshot
	for _, step := range []struct {
		what      string
		at        time.Duration
		maxAge    time.Duration
		fail      bool
		wantLists int
		wantErr   bool
	}{
		{what: "the first resolution lists", maxAge: 5 * time.Second, wantLists: 1},
		{what: "within the age it serves", at: 4 * time.Second, maxAge: 5 * time.Second, wantLists: 1},
		{what: "at the age it lists again", at: 5 * time.Second, maxAge: 5 * time.Second, wantLists: 2},
		{what: "a failed list is an error", at: 11 * time.Second, maxAge: 5 * time.Second, fail: true, wantLists: 3, wantErr: true},
		{what: "and keeps nothing", at: 11*time.Second + time.Millisecond, maxAge: 5 * time.Second, wantLists: 4},
		{what: "with no age each resolution lists", at: 11*time.Second + 2*time.Millisecond, wantLists: 5},
	} {
		now, r.fail = t0.Add(step.at), step.fail
		got, err := snap.get(context.Background(), r, clock, step.maxAge)
		if (err != nil) != step.wantErr || r.lists != step.wantLists {
			t.Fatalf("%s: err %v, %d lists; want error %v, %d lists", step.what, err, r.lists, step.wantErr, step.wantLists)
		}
		if err != nil {
			continue
		}
		if len(got) != 1 || got[0].Name != "a" || got[0].Status.ProjectID != "p" || len(got[0].Spec.PodCIDRs) != 1 ||
			got[0].Annotations != nil || got[0].Status.Conditions != nil {
			t.Fatalf("%s: snapshot %+v; want cluster a with its spec and project only", step.what, got)
		}
	}
}

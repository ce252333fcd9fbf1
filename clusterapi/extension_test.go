package clusterapi

//lint:file-ignore SA1019 Cluster API's hook requests carry a v1beta1 Cluster (api/runtime/hooks/v1alpha1)

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
)

// TestExtensionNotDeleted: the hook waits for a Cluster's own VitalsCluster to be deleted for NotDeletedAfter
// from the Cluster's deletion, then lets the deletion go on and says why on the Cluster, as the condition
// VitalsCleanedUp (False, NotDeleted) applied through the operator's fenced client; once only.
func TestExtensionNotDeleted(t *testing.T) {
	now := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	const uid = types.UID("7d3c2b1a-0f9e-4d8c-b7a6-5e4d3c2b1a0f")
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	same := metav1.Condition{Type: ConditionCleanedUp, Status: metav1.ConditionFalse, Reason: ReasonNotDeleted}
	for _, tc := range []struct {
		name     string
		ago      time.Duration     // the Cluster's deletion
		noClient bool              // the extension without a writer
		notMade  bool              // the VitalsCluster without the enrolment's label
		has      *metav1.Condition // the Cluster's VitalsCleanedUp before (its message: the answer's)
		retry    int32
		msg      string
		applied  bool
	}{
		{"within the bound: waited for", time.Minute, false, false, nil, 5, "is not deleting yet", false},
		{"beyond the bound: let go, said on the Cluster", NotDeletedAfter + time.Minute, false, false, nil, 0, "nothing deletes it", true},
		{"beyond the bound, the condition already there", NotDeletedAfter + time.Minute, false, false, &same, 0, "nothing deletes it", false},
		{"beyond the bound, no writer", NotDeletedAfter + time.Minute, true, false, nil, 0, "nothing deletes it", false},
		{"not made by the enrolment: not waited for", time.Minute, false, true, nil, 0, "was not made by the enrolment", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			del := metav1.NewTime(now.Add(-tc.ago))
			cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod", UID: uid, Generation: 3}}
			vcl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod",
				Labels:          map[string]string{v1alpha1.LabelEnrolledBy: v1alpha1.EnrolledByEnrolment},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: ClusterKind, Name: "prod", UID: uid, Controller: ptr.To(true)}}},
				Spec: v1alpha1.ClusterSpec{DeletionPolicy: v1alpha1.DeletionPolicyDeorbit}}
			if tc.notMade {
				vcl.Labels = nil
			}
			var req runtimehooksv1.BeforeClusterDeleteRequest
			req.Cluster = clusterv1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod", UID: uid, DeletionTimestamp: &del}}
			if tc.has != nil {
				var first runtimehooksv1.BeforeClusterDeleteResponse
				BeforeClusterDelete(vcl, Deleting{Since: del.Time}, now, &first)
				cd := *tc.has
				cd.Message, cd.ObservedGeneration, cd.LastTransitionTime = first.Message, cl.Generation, metav1.NewTime(now.Add(-time.Hour))
				cl.Status.Conditions = []metav1.Condition{cd}
			}
			var applied []*clusterv1.Cluster
			var owner string
			c := fencing.Client(interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithObjects(cl, vcl).Build(), interceptor.Funcs{
				SubResourceApply: func(ctx context.Context, _ client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
					data, err := json.Marshal(obj)
					if err != nil {
						return err
					}
					var got clusterv1.Cluster
					if err := json.Unmarshal(data, &got); err != nil {
						return err
					}
					if sub != "status" {
						t.Errorf("applied to %q, want the status", sub)
					}
					owner = (&client.SubResourceApplyOptions{}).ApplyOpts(opts).FieldManager
					applied = append(applied, &got)
					return nil
				},
			}))
			e := &Extension{Reader: c, Client: c, Clock: clocktesting.NewFakePassiveClock(now)}
			if tc.noClient {
				e.Client = nil
			}
			var resp runtimehooksv1.BeforeClusterDeleteResponse
			e.BeforeClusterDelete(context.Background(), &req, &resp)
			if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds != tc.retry || !strings.Contains(resp.Message, tc.msg) {
				t.Errorf("answer %s retry %d %q, want Success retry %d and a message containing %q", resp.Status, resp.RetryAfterSeconds, resp.Message, tc.retry, tc.msg)
			}
			if !tc.applied {
				if len(applied) > 0 {
					t.Errorf("a condition applied: %+v", applied[0].Status.Conditions)
				}
				return
			}
			if len(applied) != 1 {
				t.Fatalf("%d applies, want 1", len(applied))
			}
			got := applied[0]
			cd := meta.FindStatusCondition(got.Status.Conditions, ConditionCleanedUp)
			if got.UID != uid || owner != ExtensionFieldManager || len(got.Status.Conditions) != 1 || cd == nil ||
				cd.Status != metav1.ConditionFalse || cd.Reason != ReasonNotDeleted || cd.Message != resp.Message || cd.ObservedGeneration != 3 {
				t.Errorf("applied uid %s by %q: %+v; want only %s False %s with the answer's message, generation 3, by %s",
					got.UID, owner, got.Status.Conditions, ConditionCleanedUp, ReasonNotDeleted, ExtensionFieldManager)
			}
		})
	}
}

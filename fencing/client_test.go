package fencing_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// TestClient: against the real API server, every kind of write through fencing.Client is sent only
// through the fence of its context: without one, or refused by it, the object is left as it was.
func TestClient(t *testing.T) {
	cfg := testenv.Kube(t)
	raw, err := client.NewWithWatch(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := fencing.Client(raw)
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fencing-" + hex.EncodeToString(b)}}
	if err := raw.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Delete(context.Background(), ns) })
	allowed := fencing.With(ctx, open(time.Minute))
	refused := fencing.With(ctx, refuse(fencing.ReasonPaused))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "x"}, Data: map[string]string{"v": "1"}}
	for _, wctx := range []context.Context{ctx, refused} {
		if err := c.Create(wctx, cm.DeepCopy()); !fenced(err) {
			t.Fatalf("create without an allowing fence: %v, want a refusal", err)
		}
	}
	if err := raw.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused create reached the API server: %v", err)
	}
	if err := c.Create(allowed, cm); err != nil {
		t.Fatalf("create with an open fence: %v", err)
	}

	writes := map[string]func(context.Context) error{
		"update": func(ctx context.Context) error {
			u := cm.DeepCopy()
			u.Data["v"] = "2"
			return c.Update(ctx, u)
		},
		"patch": func(ctx context.Context) error {
			u := cm.DeepCopy()
			u.Data["v"] = "2"
			return c.Patch(ctx, u, client.MergeFrom(cm))
		},
		"delete": func(ctx context.Context) error { return c.Delete(ctx, cm.DeepCopy()) },
		"delete all of": func(ctx context.Context) error {
			return c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns.Name))
		},
	}
	for name, write := range writes {
		for _, wctx := range []context.Context{ctx, refused} {
			if err := write(wctx); !fenced(err) {
				t.Errorf("%s without an allowing fence: %v, want a refusal", name, err)
			}
		}
		var got corev1.ConfigMap
		if err := raw.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil || got.Data["v"] != "1" {
			t.Fatalf("a refused %s changed the object: %v %v", name, err, got.Data)
		}
	}

	// a subresource: a namespace's status (finalize) stands for every status and eviction write
	sub := ns.DeepCopy()
	for _, wctx := range []context.Context{ctx, refused} {
		if err := c.SubResource("finalize").Update(wctx, sub); !fenced(err) {
			t.Errorf("subresource update without an allowing fence: %v, want a refusal", err)
		}
		if err := c.Status().Patch(wctx, sub, client.MergeFrom(ns)); !fenced(err) {
			t.Errorf("status patch without an allowing fence: %v, want a refusal", err)
		}
	}
	if err := c.Status().Patch(allowed, sub, client.MergeFrom(ns)); err != nil {
		t.Errorf("status patch with an open fence: %v", err)
	}
	if err := c.Delete(allowed, cm); err != nil {
		t.Fatalf("delete with an open fence: %v", err)
	}
	// reads need no fence
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the delete: %v, want not found", err)
	}
}

func fenced(err error) bool {
	_, ok := fencing.ReasonOf(err)
	return ok
}

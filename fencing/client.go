package fencing

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Client returns c with every write (create, update, patch, apply, delete, delete-all-of, and the same on
// subresources: status, eviction, ...) entered through the fence of its context (Enter): a write without
// a fence, or one its fence refuses, is not sent. Reads pass unchanged.
func Client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.Create(ctx, obj, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.Delete(ctx, obj, opts...) })
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.DeleteAllOf(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.Patch(ctx, obj, patch, opts...) })
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.Apply(ctx, obj, opts...) })
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.SubResource(sub).Create(ctx, obj, subObj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			return guarded(ctx, func(ctx context.Context) error { return c.SubResource(sub).Apply(ctx, obj, opts...) })
		},
	})
}

// guarded sends one write within its fence.
func guarded(ctx context.Context, write func(context.Context) error) error {
	wctx, cancel, err := Enter(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return Explain(wctx, write(wctx))
}

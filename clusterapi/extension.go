// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimecatalog "sigs.k8s.io/cluster-api/exp/runtime/catalog"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
)

// ExtensionHandlerName is the name of Vitals' BeforeClusterDelete handler: Cluster API lists it in the
// ExtensionConfig's status as before-cluster-delete.<ExtensionConfig name>.
const ExtensionHandlerName = "before-cluster-delete"

// Bounds of one request to the extension server. A request carries one Cluster; the API server's own objects
// are at most 1.5 MiB.
const (
	MaxExtensionRequest = 2 << 20
	ExtensionTimeout    = 10 * time.Second
)

// ExtensionFieldManager is the field manager of the condition the extension puts on a Cluster (Extension.Client).
const ExtensionFieldManager = "vitals-extension"

// Extension answers Cluster API's BeforeClusterDelete lifecycle hook (a Runtime Extension) for the Clusters
// Vitals enrolled, from their VitalsClusters (BeforeClusterDelete). It relies on the enrolment to delete a
// Cluster's VitalsCluster: the operator serves it only with --capi-enrol.
type Extension struct {
	// Reader reads VitalsClusters (and Clusters) from the API server, not from a cache: a replica's cache may
	// hold only its shard, and a VitalsCluster missing from it must not let a deletion go on.
	Reader client.Reader
	// Client writes the condition ConditionCleanedUp (reason ReasonNotDeleted) on a Cluster whose VitalsCluster
	// nobody deleted within NotDeletedAfter (nil: none is written, the answer's message alone says it).
	Client client.Client
	// Clock (nil: the real one).
	Clock clock.PassiveClock
}

// BeforeClusterDelete is the hook's handler. The VitalsCluster must be the Cluster's own: named like it in its
// namespace, controlled by the Cluster of the request's UID and made by the enrolment (MadeByEnrolment); any
// other is not waited for. A VitalsCluster that
// cannot be read answers Failure, which Cluster API (failure policy Fail) takes as "not yet": nothing of the
// cluster is deleted on a failed read. One that is still not deleting NotDeletedAfter the Cluster's deletion is
// no longer waited for (the package's BeforeClusterDelete), and the Cluster gets the condition that says so.
func (e *Extension) BeforeClusterDelete(ctx context.Context, req *runtimehooksv1.BeforeClusterDeleteRequest, resp *runtimehooksv1.BeforeClusterDeleteResponse) {
	now := time.Now()
	if e.Clock != nil {
		now = e.Clock.Now()
	}
	cl := &req.Cluster
	key := client.ObjectKey{Namespace: cl.Namespace, Name: cl.Name}
	if key.Namespace == "" || key.Name == "" {
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, "the request names no Cluster (metadata.namespace and metadata.name expected)"
		return
	}
	var vcl v1alpha1.VitalsCluster
	switch err := e.Reader.Get(ctx, key, &vcl); {
	case apierrors.IsNotFound(err):
		BeforeClusterDelete(nil, Deleting{}, now, resp)
		return
	case err != nil:
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, fmt.Sprintf("read VitalsCluster %s: %v", key, err)
		return
	}
	if ref, ok := OwnerOf(&vcl); !ok || ref.UID != cl.UID {
		BeforeClusterDelete(nil, Deleting{}, now, resp)
		resp.Message = fmt.Sprintf("VitalsCluster %s is not controlled by this Cluster (uid %s): nothing for Vitals to clean up", key, cl.UID)
		return
	}
	if !MadeByEnrolment(&vcl) {
		// the enrolment deletes only the VitalsClusters it made: this one it leaves to garbage collection
		BeforeClusterDelete(nil, Deleting{}, now, resp)
		resp.Message = fmt.Sprintf("VitalsCluster %s was not made by the enrolment (no label %s): the enrolment does not delete it, nothing for Vitals to wait for", key, v1alpha1.LabelEnrolledBy)
		return
	}
	if vcl.Spec.Deletion() == v1alpha1.DeletionPolicyOrphan {
		BeforeClusterDelete(nil, Deleting{}, now, resp)
		resp.Message = fmt.Sprintf("VitalsCluster %s has deletionPolicy Orphan: Vitals deletes nothing of the cluster", key)
		return
	}
	_, paused := cl.Annotations[clusterv1.PausedAnnotation]
	d := Deleting{Paused: paused || cl.Spec.Paused}
	if cl.DeletionTimestamp != nil {
		d.Since = cl.DeletionTimestamp.Time
	}
	if BeforeClusterDelete(&vcl, d, now, resp) {
		e.notDeleted(ctx, key, cl.UID, resp.Message, now)
	}
}

// notDeleted puts the condition ConditionCleanedUp, False with reason ReasonNotDeleted and msg, on the Cluster key
// of uid, by server-side apply of that one condition (field manager ExtensionFieldManager; deorbit's own
// ConditionCleanedUp replaces it once it starts). The write is bounded by fencing.DefaultWriteTimeout but not by
// a replica's validity: every replica answers the hook, and the condition is a report any of them writes alike
// (the Cluster's UID in the object, so that another Cluster of the name is refused). Nothing is written when
// the condition is already so or the Cluster is gone; a failure is logged, the answer's message says it anyway.
func (e *Extension) notDeleted(ctx context.Context, key client.ObjectKey, uid types.UID, msg string, now time.Time) {
	if e.Client == nil {
		return
	}
	log := logf.FromContext(ctx).WithValues("cluster", key.String())
	cd := metav1.Condition{Type: ConditionCleanedUp, Status: metav1.ConditionFalse, Reason: ReasonNotDeleted, Message: msg,
		LastTransitionTime: metav1.NewTime(now)}
	wctx := fencing.With(ctx, fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		wctx, cancel := context.WithTimeout(ctx, fencing.DefaultWriteTimeout)
		return wctx, cancel, nil
	}))
	wrote, err := ApplyCondition(wctx, e.Reader, e.Client, key, uid, cd, ExtensionFieldManager)
	if err != nil {
		log.Error(err, "cannot put the hook's condition on the Cluster", "reason", cd.Reason)
		return
	}
	if !wrote {
		return
	}
	log.Info("vitalsCluster not deleted with its cluster: the deletion goes on", "reason", cd.Reason)
}

// NewExtensionServer returns Cluster API's Runtime Extension server (exp/runtime/server: the discovery handler
// and TLS from o.CertDir, reloaded when the files change) serving e's BeforeClusterDelete handler with failure
// policy Fail and a 10 s timeout. Every request's body is bounded by MaxExtensionRequest and its handling by
// ExtensionTimeout. Add it to the manager; it runs on every replica (no leader election).
func NewExtensionServer(e *Extension, o server.Options) (*server.Server, error) {
	if e == nil || e.Reader == nil {
		return nil, errors.New("runtime extension: no reader of VitalsClusters")
	}
	cat := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(cat); err != nil {
		return nil, fmt.Errorf("runtime extension: the hooks' catalog: %w", err)
	}
	o.Catalog = cat
	srv, err := server.New(o)
	if err != nil {
		return nil, fmt.Errorf("runtime extension: %w", err)
	}
	srv.Server = bounded{srv.Server}
	if err := srv.AddExtensionHandler(server.ExtensionHandler{
		Hook: runtimehooksv1.BeforeClusterDelete, Name: ExtensionHandlerName, HandlerFunc: e.BeforeClusterDelete,
		TimeoutSeconds: ptr.To(int32(ExtensionTimeout / time.Second)), FailurePolicy: ptr.To(runtimehooksv1.FailurePolicyFail),
	}); err != nil {
		return nil, fmt.Errorf("runtime extension: add the %s handler: %w", ExtensionHandlerName, err)
	}
	return srv, nil
}

// bounded registers every handler of the server bounded in body size and time.
type bounded struct{ webhook.Server }

func (b bounded) Register(path string, h http.Handler) {
	b.Server.Register(path, http.TimeoutHandler(http.MaxBytesHandler(h, MaxExtensionRequest), ExtensionTimeout, "the hook's answer took too long"))
}

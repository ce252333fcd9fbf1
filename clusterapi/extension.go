// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimecatalog "sigs.k8s.io/cluster-api/exp/runtime/catalog"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/vitalsproject/vitals/api/v1alpha1"
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

// Extension answers Cluster API's BeforeClusterDelete lifecycle hook (a Runtime Extension) for the Clusters
// Vitals enrolled, from their VitalsClusters (BeforeClusterDelete).
type Extension struct {
	// Reader reads VitalsClusters from the API server, not from a cache: a replica's cache may hold only its
	// shard, and a VitalsCluster missing from it must not let a deletion go on.
	Reader client.Reader
	// Clock (nil: the real one).
	Clock clock.PassiveClock
}

// BeforeClusterDelete is the hook's handler. The VitalsCluster must be the Cluster's own: named like it in its
// namespace and controlled by the Cluster of the request's UID; any other is not waited for. A VitalsCluster that
// cannot be read answers Failure, which Cluster API (failure policy Fail) takes as "not yet": nothing of the
// cluster is deleted on a failed read.
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
		BeforeClusterDelete(nil, now, resp)
		return
	case err != nil:
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, fmt.Sprintf("read VitalsCluster %s: %v", key, err)
		return
	}
	if ref, ok := OwnerOf(&vcl); !ok || ref.UID != cl.UID {
		BeforeClusterDelete(nil, now, resp)
		resp.Message = fmt.Sprintf("VitalsCluster %s is not controlled by this Cluster (uid %s): nothing for Vitals to clean up", key, cl.UID)
		return
	}
	if vcl.Spec.Deletion() == v1alpha1.DeletionPolicyOrphan {
		BeforeClusterDelete(nil, now, resp)
		resp.Message = fmt.Sprintf("VitalsCluster %s has deletionPolicy Orphan: Vitals deletes nothing of the cluster", key)
		return
	}
	BeforeClusterDelete(&vcl, now, resp)
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

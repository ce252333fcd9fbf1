// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/fencing"
)

// AnnotationRemediate on a Node asks for its repair now, as Cluster API's cluster.x-k8s.io/remediate-machine
// asks a MachineHealthCheck: the node counts as unhealthy without a dwell, and every other guard still
// applies (exclusion, pool, storm, outage freeze, cooldown, reboot-loop cap, drain). Its value is free (a
// ticket or a reason, "true" says nothing more); the repair takes it off once its step is taken.
const AnnotationRemediate = "vitals.vitalsproject.io/remediate-node"

// ReasonRequestWithdrawn: the step was decided on AnnotationRemediate, which is gone from the Node now.
const ReasonRequestWithdrawn fencing.Reason = "RequestWithdrawn"

// Requested reports whether n carries AnnotationRemediate with a value that is not false.
func Requested(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	v, ok := n.Annotations[AnnotationRemediate]
	return ok && !strings.EqualFold(strings.TrimSpace(v), "false")
}

// Unrequest takes AnnotationRemediate off the Node named as n, as answered, only if it still has the value n
// shows (a JSON patch test: a request made again meanwhile, with another value, stays). A Node gone, or
// without the annotation, is left alone.
func Unrequest(ctx context.Context, c client.Client, n *corev1.Node) error {
	v, ok := n.Annotations[AnnotationRemediate]
	if !ok {
		return nil
	}
	path := "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(AnnotationRemediate, "~", "~0"), "/", "~1")
	patch, err := json.Marshal([]map[string]string{{"op": "test", "path": path, "value": v}, {"op": "remove", "path": path}})
	if err != nil {
		return fmt.Errorf("encode the removal of %s from node %s: %w", AnnotationRemediate, n.Name, err)
	}
	err = c.Patch(ctx, n.DeepCopy(), client.RawPatch(types.JSONPatchType, patch))
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsInvalid(err) || apierrors.IsConflict(err):
		return nil // the annotation changed or went meanwhile: that request is someone else's now
	}
	return fmt.Errorf("take %s off node %s: %w", AnnotationRemediate, n.Name, err)
}

// requestStill refuses when w was decided on the Node's request and the fresh Node no longer carries it.
func requestStill(n *corev1.Node, w Want) error {
	if !w.Requested || Requested(n) {
		return nil
	}
	return &fencing.Error{Reason: ReasonRequestWithdrawn, Message: fmt.Sprintf("node %s no longer carries %s: the requested repair was withdrawn", n.Name, AnnotationRemediate)}
}

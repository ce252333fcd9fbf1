// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/openstack"
)

// Reasons Recheck refuses a disruptive write for (fencing reasons: a repair counts the refusal as held and
// records it), besides fencing.ReasonExcluded (the exclusion label on the Node or the metadata on the server)
// and fencing.ReasonUnverified (the Nodes or the server could not be read: nothing is proven either way).
const (
	// ReasonNodeGone: the Node the step was decided on is gone.
	ReasonNodeGone fencing.Reason = "NodeGone"
	// ReasonNodeRecovered: the Node no longer holds the condition the step was decided on (it turned
	// healthy, or the condition changed and its dwell starts again).
	ReasonNodeRecovered fencing.Reason = "NodeRecovered"
	// ReasonNodeMoved: the Node names another server now (or none).
	ReasonNodeMoved fencing.Reason = "NodeNamesAnotherServer"
	// ReasonNodeRegistered: a Node names the server now, which none did when the step was decided.
	ReasonNodeRegistered fencing.Reason = "NodeRegistered"
	// ReasonServerShared: another Node, Ready, names the same server (same providerID).
	ReasonServerShared fencing.Reason = "ServerNamedByReadyNode"
	// ReasonServerGone: Nova has no such server any more.
	ReasonServerGone fencing.Reason = "ServerGone"
	// ReasonServerChanged: the server is no longer in the state the step was decided on (Want.Server's check).
	ReasonServerChanged fencing.Reason = "ServerChanged"
)

// Want is the state a disruptive step on a server was decided on, from the pass's read.
type Want struct {
	// Server is the server's ID.
	Server string
	// Node is the Node that named it ("" when none did: a server that never registered).
	Node string
	// Condition is the Node's condition the step was decided on (its type, status and lastTransitionTime):
	// the fresh Node must still hold it, unchanged (a transition since, even back to the same status, is a new
	// dwell). A zero Type checks no condition (a fault of the server's own: vm_state error, or a Machine's
	// health that the caller checks).
	Condition corev1.NodeCondition
	// ServerState, when set, says why the fresh server no longer fits the step ("" when it does).
	ServerState func(*openstack.Server) string
	// Requested: the step was decided on the Node's AnnotationRemediate (no condition held for its dwell):
	// the fresh Node must still carry it.
	Requested bool
}

// Fresh is what Recheck read.
type Fresh struct {
	// Node is the Node read from the API server (nil when Want.Node is "").
	Node *corev1.Node
	// Server is the server read from Nova.
	Server *openstack.Server
}

// ServerReader reads one server (a tenancy-scoped cloud: the server must still be the project's).
type ServerReader interface {
	GetServer(ctx context.Context, id string) (*openstack.Server, error)
}

// Recheck reads the server from Nova and then the Nodes from the API server (r: an uncached reader, never an
// informer cache), immediately before a disruptive write on w.Server, and refuses the write (a *fencing.Error whose
// Reason says why) unless the state is still the one the step was decided on: the Node still there, still
// naming that server, still holding w.Condition, not excluded; no Node named the server if none did; no other
// Node naming the server Ready; the server still there, not excluded, and in a state w.ServerState accepts.
// Every refusal but a failed read is an answer: the write is not sent, and the next pass decides again.
func Recheck(ctx context.Context, r client.Reader, servers ServerReader, w Want) (Fresh, error) {
	var fresh Fresh
	// The server first, the Nodes last: a Node that turns Ready while Nova is slow to answer is seen.
	sv, err := servers.GetServer(ctx, w.Server)
	switch {
	case openstack.IsNotFound(err):
		return fresh, &fencing.Error{Reason: ReasonServerGone, Message: "server " + w.Server + " is gone from Nova"}
	case err != nil:
		return fresh, &fencing.Error{Reason: fencing.ReasonUnverified, Message: fmt.Sprintf("read server %s again: %v", w.Server, err)}
	}
	fresh.Server = sv
	if Excluded(nil, sv.Metadata) {
		return fresh, &fencing.Error{Reason: fencing.ReasonExcluded, Message: "server " + w.Server + " is excluded by its metadata " + LabelExclude}
	}
	if w.ServerState != nil {
		if why := w.ServerState(sv); why != "" {
			return fresh, &fencing.Error{Reason: ReasonServerChanged, Message: "server " + w.Server + " " + why}
		}
	}
	var nl corev1.NodeList
	if err := r.List(ctx, &nl); err != nil {
		return fresh, &fencing.Error{Reason: fencing.ReasonUnverified, Message: fmt.Sprintf("read the Nodes again before acting on server %s: %v", w.Server, err)}
	}
	var others []string
	for i := range nl.Items {
		n := &nl.Items[i]
		if n.Name == w.Node {
			fresh.Node = n
			continue
		}
		if ServerID(n.Spec.ProviderID) != w.Server {
			continue
		}
		if w.Node == "" {
			return fresh, &fencing.Error{Reason: ReasonNodeRegistered, Message: fmt.Sprintf("node %s names server %s now: nothing is done on a server that registered meanwhile", n.Name, w.Server)}
		}
		if Ready(n) {
			others = append(others, n.Name)
		}
	}
	if len(others) > 0 {
		return fresh, &fencing.Error{Reason: ReasonServerShared, Message: fmt.Sprintf("server %s is named by Ready node %s too (same providerID): never acted on", w.Server, strings.Join(others, ", "))}
	}
	if w.Node != "" {
		if err := nodeStill(fresh.Node, w); err != nil {
			return fresh, err
		}
	}
	return fresh, nil
}

// nodeStill refuses when n (the fresh read of w.Node) no longer fits w.
func nodeStill(n *corev1.Node, w Want) error {
	switch {
	case n == nil:
		return &fencing.Error{Reason: ReasonNodeGone, Message: "node " + w.Node + " is gone"}
	case ServerID(n.Spec.ProviderID) != w.Server:
		return &fencing.Error{Reason: ReasonNodeMoved, Message: fmt.Sprintf("node %s names %q now, not server %s", n.Name, n.Spec.ProviderID, w.Server)}
	case Excluded(n, nil):
		return &fencing.Error{Reason: fencing.ReasonExcluded, Message: "node " + n.Name + " is excluded by its label " + LabelExclude}
	}
	if err := requestStill(n, w); err != nil {
		return err
	}
	if w.Condition.Type == "" {
		return nil
	}
	c, ok := Condition(n, w.Condition.Type)
	if !ok || c.Status != w.Condition.Status || !c.LastTransitionTime.Equal(&w.Condition.LastTransitionTime) {
		now := "no " + string(w.Condition.Type) + " condition"
		if ok {
			now = fmt.Sprintf("%s=%s since %s", c.Type, c.Status, c.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"))
		}
		return &fencing.Error{Reason: ReasonNodeRecovered, Message: fmt.Sprintf("node %s no longer holds %s=%s since %s (%s now): the step was decided on a state that is gone",
			n.Name, w.Condition.Type, w.Condition.Status, w.Condition.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"), now)}
	}
	return nil
}

// Duplicates are the servers named by more than one Node (the same providerID), each with its Nodes' names,
// sorted: a stale Node left after a re-registration, or a forged one. No repair acts on such a server: which
// Node is its own is not known.
func Duplicates(ns []corev1.Node) map[string][]string {
	by := map[string][]string{}
	for i := range ns {
		if id := ServerID(ns[i].Spec.ProviderID); id != "" {
			by[id] = append(by[id], ns[i].Name)
		}
	}
	for id, names := range by {
		if len(names) < 2 {
			delete(by, id)
			continue
		}
		slices.Sort(names)
	}
	return by
}

package flight

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

// TestErroredHold: a server in ERROR is deleted only where the node repair would delete it: not excluded,
// not a control-plane node unless turned on, no Cluster API, Gardener or Magnum server, deleting on and a
// manager that replaces it, no second Node naming it; its delete is in its node's pool.
func TestErroredHold(t *testing.T) {
	replaced := map[string]string{"pool": "a"}
	node := func(labels, annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels, Annotations: annotations}}
	}
	replacement := func(r *v1alpha1.NodeRepair) { r.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "pool"} }
	tests := []struct {
		name     string
		metadata map[string]string
		node     *corev1.Node
		cluster  map[string]string
		dup      []string
		spec     []func(*v1alpha1.NodeRepair)
		hold     string // what the reason starts with ("" : deleted)
		pool     string
	}{
		{name: "replaced by its manager: deleted", metadata: replaced, spec: []func(*v1alpha1.NodeRepair){replacement}, pool: "workers"},
		{name: "a Node of a pool: deleted in its pool", metadata: replaced, node: node(map[string]string{"np": "gpu"}, nil),
			spec: []func(*v1alpha1.NodeRepair){replacement, func(r *v1alpha1.NodeRepair) { r.NodePoolLabel = "np" }}, pool: "gpu"},
		{name: "named by two Nodes: neither is acted on", metadata: replaced, node: node(nil, nil), dup: []string{"n1", "n1-old"},
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: "named by 2 Nodes", pool: "workers"},
		{name: "no replacement configured", metadata: replaced, hold: StopNoReplacement, pool: "workers"},
		{name: "the server lacks the replacement key", metadata: map[string]string{}, spec: []func(*v1alpha1.NodeRepair){replacement}, hold: StopNoReplacement, pool: "workers"},
		{name: "delete: false", metadata: replaced, spec: []func(*v1alpha1.NodeRepair){replacement, func(r *v1alpha1.NodeRepair) { r.Delete = new(false) }},
			hold: StopNoReplacement, pool: "workers"},
		{name: "excluded by metadata", metadata: map[string]string{"pool": "a", "vitals.vitalsproject.io/exclude-from-remediation": "true"},
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: "excluded", pool: "workers"},
		{name: "excluded by its Node's label", metadata: replaced, node: node(map[string]string{"vitals.vitalsproject.io/exclude-from-remediation": "true"}, nil),
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: "excluded", pool: "workers"},
		// A failed live migration leaves a running control-plane server in vm_state error.
		{name: "a control-plane node, off by default", metadata: replaced, node: node(map[string]string{"node-role.kubernetes.io/control-plane": ""}, nil),
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: "a control-plane node", pool: "control-plane"},
		{name: "a control-plane node, turned on: deleted, one at a time", metadata: replaced, node: node(map[string]string{"node-role.kubernetes.io/control-plane": ""}, nil),
			spec: []func(*v1alpha1.NodeRepair){replacement, func(r *v1alpha1.NodeRepair) { r.ControlPlane = &v1alpha1.ControlPlaneRepair{Enabled: new(true)} }}, pool: "control-plane"},
		{name: "a Cluster API Machine's node", metadata: replaced, node: node(nil, map[string]string{"cluster.x-k8s.io/machine": "md-0"}),
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: StopClusterAPI, pool: "workers"},
		{name: "a Cluster API Cluster's server without a Node", metadata: replaced, cluster: map[string]string{"cluster.x-k8s.io/cluster-name": "c1"},
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: StopClusterAPI, pool: "workers"},
		{name: "Gardener's server", metadata: map[string]string{"pool": "a", "kubernetes.io-role-node": "1", "kubernetes.io-cluster-shoot--p--c": "1"},
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: "ManagedByGardener", pool: "workers"},
		{name: "Magnum's node", metadata: replaced, node: node(map[string]string{"magnum.openstack.org/role": "worker"}, nil),
			spec: []func(*v1alpha1.NodeRepair){replacement}, hold: "ManagedByMagnum", pool: "workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec v1alpha1.NodeRepair
			for _, m := range tt.spec {
				m(&spec)
			}
			s := spec.Settings()
			sv := openstack.Server{ID: "s1", Status: "ERROR", VMState: "error", Metadata: tt.metadata}
			c := newCase(sv, tt.node, tt.dup, s, &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Labels: tt.cluster}}, nil)
			got := erroredHold(c, s)
			if (got == "") != (tt.hold == "") || !strings.HasPrefix(got, tt.hold) {
				t.Errorf("erroredHold = %q, want %q", got, tt.hold)
			}
			if c.pool != tt.pool {
				t.Errorf("pool %q, want %q", c.pool, tt.pool)
			}
		})
	}
}

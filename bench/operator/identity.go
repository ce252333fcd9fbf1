package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// operatorSA is the name of the ServiceAccount the replicas act as (impersonated), as the chart names it.
const operatorSA = "vitals-operator"

// asOperator sets the bench up so that the replicas act as the operator's ServiceAccount in ns, as they
// do when the chart installs them, instead of the kubeconfig's system:masters user, whom API Priority
// and Fairness exempts: the ServiceAccount gets cluster-admin (RBAC is not what is measured here;
// test/e2e/chart_rbac_test.go proves the chart's), and the chart's FlowSchema for the operator's Lease
// requests (from manifests, its defaults rendered) is created for ns. Everything goes with the private
// API server.
func asOperator(ctx context.Context, c client.Client, ns, manifests string) error {
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: operatorSA, Namespace: ns}}}
	if err := c.Create(ctx, crb); err != nil {
		return fmt.Errorf("bind ServiceAccount %s/%s to cluster-admin: %w", ns, operatorSA, err)
	}
	fs, err := chartFlowSchema(manifests)
	if err != nil {
		return err
	}
	fs.ObjectMeta = metav1.ObjectMeta{Name: "bench-" + ns + "-leases"}
	for k := range fs.Spec.Rules {
		r := &fs.Spec.Rules[k]
		for s := range r.Subjects {
			if sa := r.Subjects[s].ServiceAccount; sa != nil {
				sa.Name, sa.Namespace = operatorSA, ns
			}
		}
		for q := range r.ResourceRules {
			r.ResourceRules[q].Namespaces = []string{ns}
		}
	}
	if err := c.Create(ctx, fs); err != nil {
		return fmt.Errorf("create the chart's FlowSchema for %s: %w", ns, err)
	}
	return nil
}

// chartFlowSchema reads the FlowSchema of the operator's Leases from the rendered chart.
func chartFlowSchema(manifests string) (*flowcontrolv1.FlowSchema, error) {
	b, err := os.ReadFile(manifests)
	if err != nil {
		return nil, fmt.Errorf("read the chart's manifests: %w", err)
	}
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var fs flowcontrolv1.FlowSchema
		if err := d.Decode(&fs); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s holds no FlowSchema", manifests)
			}
			return nil, fmt.Errorf("decode %s: %w", manifests, err)
		}
		if fs.Kind == "FlowSchema" {
			return &fs, nil
		}
	}
}

// impersonate makes every user of cfg act as the operator's ServiceAccount in ns.
func impersonate(cfg *clientcmdapi.Config, ns string) {
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + ns + ":" + operatorSA
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
}

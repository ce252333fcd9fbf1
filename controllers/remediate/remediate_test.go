// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

func TestMachineOwner(t *testing.T) {
	machine := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u1"}
	}
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		ok   bool
	}{
		{"the Machine of its name, v1beta2", []metav1.OwnerReference{machine("cluster.x-k8s.io/v1beta2", "Machine", "m1")}, true},
		{"the Machine of its name, v1beta1", []metav1.OwnerReference{machine("cluster.x-k8s.io/v1beta1", "Machine", "m1")}, true},
		{"a Machine of another name", []metav1.OwnerReference{machine("cluster.x-k8s.io/v1beta2", "Machine", "m2")}, false},
		{"a Machine of another group", []metav1.OwnerReference{machine("machine.openshift.io/v1beta1", "Machine", "m1")}, false},
		{"a MachineSet", []metav1.OwnerReference{machine("cluster.x-k8s.io/v1beta2", "MachineSet", "m1")}, false},
		{"no owner", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rem := &v1alpha1.VitalsRemediation{ObjectMeta: metav1.ObjectMeta{Name: "m1", OwnerReferences: tc.refs}}
			if _, ok := machineOwner(rem); ok != tc.ok {
				t.Errorf("machineOwner = %v, want %v", ok, tc.ok)
			}
		})
	}
}

func TestRebootable(t *testing.T) {
	for _, tc := range []struct {
		step, status string
		want         bool
	}{
		{StepSoft, "ACTIVE", true},
		{StepSoft, "REBOOT", false},
		{StepSoft, "SHUTOFF", false},
		{StepHard, "ACTIVE", true},
		{StepHard, "REBOOT", true},
		{StepHard, "SHUTOFF", true},
		{StepHard, "HARD_REBOOT", false},
		{StepHard, "ERROR", false},
		{StepHard, "BUILD", false},
	} {
		if got := rebootable(tc.step, tc.status); got != tc.want {
			t.Errorf("rebootable(%s, %s) = %v, want %v", tc.step, tc.status, got, tc.want)
		}
	}
}

// TestExample: examples/machinehealthcheck-remediation.yaml is a VitalsRemediationTemplate and a Cluster API
// v1beta2 MachineHealthCheck, both strictly valid Go types, the check's templateRef naming the template.
func TestExample(t *testing.T) {
	data, err := os.ReadFile("../../examples/machinehealthcheck-remediation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl v1alpha1.VitalsRemediationTemplate
	var mhc clusterv1.MachineHealthCheck
	dec := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var into any = &tpl
		if i == 1 {
			into = &mhc
		}
		if err := sigsyaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
	}
	ref := mhc.Spec.Remediation.TemplateRef
	if ref.APIVersion != v1alpha1.GroupVersion.String() || ref.Kind != "VitalsRemediationTemplate" || ref.Name != tpl.Name || mhc.Namespace != tpl.Namespace {
		t.Errorf("templateRef %+v (namespace %s) does not name the template %s/%s", ref, mhc.Namespace, tpl.Namespace, tpl.Name)
	}
	if s := tpl.Spec.Template.Spec; s.SoftReboot().Duration <= 0 || s.HardReboot().Duration <= s.SoftReboot().Duration {
		t.Errorf("template's timeouts %+v", s)
	}
}

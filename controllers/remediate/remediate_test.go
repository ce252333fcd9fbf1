// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

//lint:file-ignore SA1019 the hand-back's deprecated v1beta1 condition is tested too

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

func TestReplacer(t *testing.T) {
	ref := func(apiVersion, kind string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "o1", UID: "u1", Controller: &controller}
	}
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		ok   bool
	}{
		{"a MachineSet controls it", []metav1.OwnerReference{ref("cluster.x-k8s.io/v1beta2", "MachineSet", true)}, true},
		{"a MachineSet of v1beta1 controls it", []metav1.OwnerReference{ref("cluster.x-k8s.io/v1beta1", "MachineSet", true)}, true},
		{"a KubeadmControlPlane controls it", []metav1.OwnerReference{ref("controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", true)}, true},
		{"another control plane provider", []metav1.OwnerReference{ref("controlplane.cluster.x-k8s.io/v1beta1", "K0smotronControlPlane", true)}, true},
		{"a MachineSet owns it, not as controller", []metav1.OwnerReference{ref("cluster.x-k8s.io/v1beta2", "MachineSet", false)}, false},
		{"a MachinePool controls it", []metav1.OwnerReference{ref("cluster.x-k8s.io/v1beta2", "MachinePool", true)}, false},
		{"a MachineSet of another group", []metav1.OwnerReference{ref("machine.openshift.io/v1beta1", "MachineSet", true)}, false},
		{"no owner", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", OwnerReferences: tc.refs}}
			if _, ok := replacer(m); ok != tc.ok {
				t.Errorf("replacer = %v, want %v", ok, tc.ok)
			}
		})
	}
}

func TestSetOwnerRemediated(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	health := metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionFalse, Reason: "UnhealthyNode", LastTransitionTime: earlier}
	for _, tc := range []struct {
		name     string
		conds    []metav1.Condition
		v1beta1  clusterv1.Conditions
		wantTime metav1.Time // of the v1beta2 OwnerRemediated condition
	}{
		{name: "none yet", conds: []metav1.Condition{health}, wantTime: metav1.NewTime(now)},
		{name: "True before (remediated once)", conds: []metav1.Condition{health,
			{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionTrue, Reason: "Remediated", LastTransitionTime: earlier}},
			v1beta1:  clusterv1.Conditions{{Type: clusterv1.MachineOwnerRemediatedV1Beta1Condition, Status: corev1.ConditionTrue, LastTransitionTime: earlier}},
			wantTime: metav1.NewTime(now)},
		{name: "False already: left as it is", conds: []metav1.Condition{health,
			{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: "MachineDeleting", LastTransitionTime: earlier}},
			v1beta1:  clusterv1.Conditions{{Type: clusterv1.MachineOwnerRemediatedV1Beta1Condition, Status: corev1.ConditionFalse, Reason: "MachineDeleting", LastTransitionTime: earlier}},
			wantTime: earlier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &clusterv1.Machine{}
			m.Status.Conditions = append([]metav1.Condition(nil), tc.conds...)
			if tc.v1beta1 != nil {
				m.Status.Deprecated = &clusterv1.MachineDeprecatedStatus{V1Beta1: &clusterv1.MachineV1Beta1DeprecatedStatus{Conditions: append(clusterv1.Conditions(nil), tc.v1beta1...)}}
			}
			setOwnerRemediated(m, now)
			c := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineOwnerRemediatedCondition)
			if c == nil || c.Status != metav1.ConditionFalse || !c.LastTransitionTime.Equal(&tc.wantTime) {
				t.Fatalf("OwnerRemediated %+v, want False since %s", c, tc.wantTime)
			}
			if h := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineHealthCheckSucceededCondition); h == nil || h.Reason != "UnhealthyNode" {
				t.Errorf("HealthCheckSucceeded not kept: %+v", m.Status.Conditions)
			}
			var old *clusterv1.Condition
			for i, oc := range m.Status.Deprecated.V1Beta1.Conditions {
				if oc.Type == clusterv1.MachineOwnerRemediatedV1Beta1Condition {
					if old != nil {
						t.Fatalf("two v1beta1 OwnerRemediated conditions: %+v", m.Status.Deprecated.V1Beta1.Conditions)
					}
					old = &m.Status.Deprecated.V1Beta1.Conditions[i]
				}
			}
			if old == nil || old.Status != corev1.ConditionFalse || !old.LastTransitionTime.Equal(&tc.wantTime) {
				t.Errorf("v1beta1 OwnerRemediated %+v, want False since %s", old, tc.wantTime)
			}
		})
	}
}

// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package enrol_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/enrol"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

const timeout = 5 * time.Minute

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, clusterv1.AddToScheme, infrav1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// startEnrol runs the enrolment in a manager of its own on cfg, its writes through fencing.Client as the
// operator's are.
func startEnrol(t *testing.T, cfg *rest.Config, o enrol.Options) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme(t), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, co client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, co)
			if err != nil {
				return nil, err
			}
			return fencing.Client(c), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := enrol.New(&pass.Deps{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

func eventually(t *testing.T, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok, msg := f()
		if ok {
			return
		}
		last = msg
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %s", what, timeout, last)
}

// TestEnrol: against the Cluster API management cluster of the harness (the Cluster API core manager and CAPO on
// the real Keystone and Neutron), a labelled Cluster on an OpenStackCluster is enrolled with the VitalsCluster
// CAPO's status describes, owned by the Cluster, deletionPolicy Deorbit; an edit of the fields the owner decides
// is put back and a change of the Cluster's pod CIDRs followed; a paused Cluster pauses its VitalsCluster and
// nothing of it follows until it is unpaused; a Cluster without the label is left alone; its Machines carry the
// deletion hook from the moment they are seen, and one deleted while the Cluster lives is released and goes;
// opted out (label "false") after its enrolment, the Cluster's VitalsCluster is no longer followed but kept, its
// Machines still held; the Cluster's deletion-policy label (Orphan, Deorbit) is followed, a misspelt one is not; a
// VitalsCluster a Cluster controls but the enrolment did not make (no label enrolled-by) is left alone until the
// label is put on by hand; deleting the Cluster deletes its VitalsCluster all the same (its deletionPolicy Deorbit
// stands), its Machines stay held while the VitalsCluster is there, and CAPO's teardown ends once it is gone.
func TestEnrol(t *testing.T) {
	env := testenv.CAPI(t)
	cfg := env.Config(t)
	testenv.InstallCRD(t, cfg)
	c, err := client.New(cfg, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := testenv.Namespace(t, cfg, "enrol")
	startEnrol(t, cfg, enrol.Options{NotReadyRequeue: 2 * time.Second})

	clouds, err := os.ReadFile(env.CloudsYAML)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-cloud-config"}, Data: map[string][]byte{"clouds.yaml": clouds}}
	osc := &infrav1.OpenStackCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
		Spec: infrav1.OpenStackClusterSpec{
			IdentityRef:                infrav1.OpenStackIdentityReference{Name: secret.Name, CloudName: "openstack"},
			ManagedSubnets:             []infrav1.SubnetSpec{{CIDR: "10.7.0.0/24"}},
			ExternalNetwork:            &infrav1.NetworkParam{ID: ptr.To(env.ExternalNetworkID)},
			DisableAPIServerFloatingIP: ptr.To(true),
			ManagedSecurityGroups:      &infrav1.ManagedSecurityGroups{},
		}}
	ref := clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.SchemeGroupVersion.Group, Kind: "OpenStackCluster", Name: "c1"}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1", Labels: map[string]string{clusterapi.EnrolLabel: "true"}},
		Spec: clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}}},
			InfrastructureRef: ref}}
	// not labelled, on an OpenStackCluster that never comes: never enrolled
	other := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c2"},
		Spec: clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.245.0.0/16"}}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: "c2"}}}
	start := time.Now()
	for _, o := range []client.Object{secret, osc, cl, other} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{other, cl} {
			_ = c.Delete(context.Background(), o)
		}
	})

	key := client.ObjectKey{Namespace: ns, Name: "c1"}
	var vcl v1alpha1.VitalsCluster
	get := func() (bool, string) {
		if err := c.Get(ctx, key, &vcl); err != nil {
			return false, err.Error()
		}
		return true, ""
	}
	eventually(t, "the VitalsCluster of the labelled Cluster created", get)
	t.Logf("VitalsCluster created %.1f s after the Cluster", time.Since(start).Seconds())
	if err := c.Get(ctx, key, osc); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, cl); err != nil {
		t.Fatal(err)
	}
	s := vcl.Spec
	want := func(field, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("spec.%s = %q, want %q", field, got, want)
		}
	}
	st := osc.Status
	want("openstack.routerID", s.OpenStack.RouterID, st.Router.ID)
	want("openstack.networkID", s.OpenStack.NetworkID, st.Network.ID)
	want("openstack.subnetID", s.OpenStack.SubnetID, st.Network.Subnets[0].ID)
	want("openstack.securityGroupID", s.OpenStack.SecurityGroupID, st.WorkerSecurityGroup.ID)
	want("openstack.credentialsSecretRef", fmt.Sprint(*s.OpenStack.CredentialsSecretRef), "{c1-cloud-config clouds.yaml}")
	want("openstack.cloud", s.OpenStack.Cloud, "openstack")
	want("openstack.caCertKey", s.OpenStack.CACertKey, "cacert")
	want("openstack.clusterName", s.OpenStack.ClusterName, "c1")
	want("kubeconfigSecretRef", fmt.Sprint(*s.KubeconfigSecretRef), "{c1-kubeconfig value}")
	want("podCIDRs", fmt.Sprint(s.PodCIDRs), "[10.244.0.0/16]")
	want("deletionPolicy", string(s.DeletionPolicy), string(v1alpha1.DeletionPolicyDeorbit))
	if !metav1.IsControlledBy(&vcl, cl) {
		t.Errorf("VitalsCluster owners %v, want controlled by Cluster %s", vcl.OwnerReferences, cl.UID)
	}
	if vcl.Labels[v1alpha1.LabelEnrolledBy] != v1alpha1.EnrolledByEnrolment {
		t.Errorf("VitalsCluster labels %v, want %s=%s", vcl.Labels, v1alpha1.LabelEnrolledBy, v1alpha1.EnrolledByEnrolment)
	}

	// the VitalsCluster's health on the Cluster: Unknown until it reports, then following its Ready, on the
	// v1beta2 conditions and the deprecated v1beta1 ones
	healthIs := func(want metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			if err := c.Get(ctx, key, cl); err != nil {
				return false, err.Error()
			}
			cd := meta.FindStatusCondition(cl.Status.Conditions, clusterapi.ConditionHealthy)
			i := slices.IndexFunc(cl.GetV1Beta1Conditions(), func(c clusterv1.Condition) bool { return c.Type == clusterapi.ConditionHealthy })
			if want == "" {
				return cd == nil && i < 0, fmt.Sprintf("condition %v, on v1beta1 %v", cd, i >= 0)
			}
			return cd != nil && cd.Status == want && cd.Reason == reason && i >= 0, fmt.Sprintf("condition %v, on v1beta1 %v", cd, i >= 0)
		}
	}
	setReady := func(st metav1.ConditionStatus, reason string) {
		t.Helper()
		if ok, msg := get(); !ok {
			t.Fatal(msg)
		}
		b := vcl.DeepCopy()
		vcl.Status.ObservedGeneration = vcl.Generation
		meta.SetStatusCondition(&vcl.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: st, Reason: reason, Message: "set by the test"})
		if err := c.Status().Patch(ctx, &vcl, client.MergeFrom(b)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the Cluster's VitalsHealthy Unknown before the VitalsCluster reports", healthIs(metav1.ConditionUnknown, clusterapi.ReasonNotReported))
	setReady(metav1.ConditionTrue, "Ready")
	eventually(t, "the Cluster's VitalsHealthy True with its VitalsCluster Ready", healthIs(metav1.ConditionTrue, clusterapi.ReasonHealthy))
	setReady(metav1.ConditionFalse, "InvalidCredentials")
	eventually(t, "the Cluster's VitalsHealthy False with its VitalsCluster not Ready", healthIs(metav1.ConditionFalse, "InvalidCredentials"))

	// the Cluster's deletion-policy label: Orphan (health alone) is followed, and so is Deorbit again; without the
	// label the policy stays as it is
	setPolicy := func(p string) {
		t.Helper()
		if err := c.Get(ctx, key, cl); err != nil {
			t.Fatal(err)
		}
		b := cl.DeepCopy()
		if p == "" {
			delete(cl.Labels, clusterapi.DeletionPolicyLabel)
		} else {
			cl.Labels[clusterapi.DeletionPolicyLabel] = p
		}
		if err := c.Patch(ctx, cl, client.MergeFrom(b)); err != nil {
			t.Fatal(err)
		}
	}
	policyIs := func(want v1alpha1.DeletionPolicy) func() (bool, string) {
		return func() (bool, string) {
			if ok, msg := get(); !ok {
				return false, msg
			}
			return vcl.Spec.DeletionPolicy == want, "deletionPolicy " + string(vcl.Spec.DeletionPolicy)
		}
	}
	setPolicy("Orphan")
	eventually(t, "the VitalsCluster Orphan with its Cluster's label", policyIs(v1alpha1.DeletionPolicyOrphan))
	setPolicy("orphan") // misspelt: nothing changes
	time.Sleep(3 * time.Second)
	if ok, msg := policyIs(v1alpha1.DeletionPolicyOrphan)(); !ok {
		t.Errorf("a misspelt deletion-policy label changed the VitalsCluster: %s", msg)
	}
	setPolicy("Deorbit")
	eventually(t, "the VitalsCluster Deorbit again with its Cluster's label", policyIs(v1alpha1.DeletionPolicyDeorbit))
	setPolicy("")

	// an edit of a field the owner decides is put back; one the user decides stays
	before := vcl.DeepCopy()
	vcl.Spec.OpenStack.SubnetID = "edited"
	vcl.Spec.Remediation.DryRun = true
	if err := c.Patch(ctx, &vcl, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edited subnet put back", func() (bool, string) {
		if ok, msg := get(); !ok {
			return false, msg
		}
		return vcl.Spec.OpenStack.SubnetID == st.Network.Subnets[0].ID, "subnetID " + vcl.Spec.OpenStack.SubnetID
	})
	if !vcl.Spec.Remediation.DryRun {
		t.Errorf("the user's spec.remediation.dryRun was taken off")
	}

	setPods := func(pods ...string) {
		t.Helper()
		if err := c.Get(ctx, key, cl); err != nil {
			t.Fatal(err)
		}
		b := cl.DeepCopy()
		cl.Spec.ClusterNetwork.Pods.CIDRBlocks = pods
		if err := c.Patch(ctx, cl, client.MergeFrom(b)); err != nil {
			t.Fatalf("change the Cluster's pod CIDRs: %v", err)
		}
	}
	podsAre := func(want string) func() (bool, string) {
		return func() (bool, string) {
			if ok, msg := get(); !ok {
				return false, msg
			}
			got := fmt.Sprint(vcl.Spec.PodCIDRs)
			return got == want, "podCIDRs " + got
		}
	}
	setPods("10.244.0.0/16", "10.250.0.0/16")
	eventually(t, "the Cluster's new pod CIDRs followed", podsAre("[10.244.0.0/16 10.250.0.0/16]"))

	// paused: the VitalsCluster is paused, and nothing of it follows until the Cluster is unpaused
	pause := func(on bool) {
		t.Helper()
		if err := c.Get(ctx, key, cl); err != nil {
			t.Fatal(err)
		}
		b := cl.DeepCopy()
		if on {
			metav1.SetMetaDataAnnotation(&cl.ObjectMeta, clusterv1.PausedAnnotation, "")
		} else {
			delete(cl.Annotations, clusterv1.PausedAnnotation)
		}
		if err := c.Patch(ctx, cl, client.MergeFrom(b)); err != nil {
			t.Fatal(err)
		}
	}
	pause(true)
	eventually(t, "the VitalsCluster paused with its Cluster", func() (bool, string) {
		if ok, msg := get(); !ok {
			return false, msg
		}
		return vcl.Annotations[v1alpha1.AnnotationPaused] == "true" && vcl.Annotations[clusterapi.PausedByAnnotation] == clusterapi.PausedByValue,
			fmt.Sprint("annotations ", vcl.Annotations)
	})
	setPods("10.244.0.0/16")
	time.Sleep(3 * time.Second) // a follow would be written within a second or two
	if ok, msg := podsAre("[10.244.0.0/16 10.250.0.0/16]")(); !ok {
		t.Errorf("the VitalsCluster of a paused Cluster changed: %s", msg)
	}
	pause(false)
	eventually(t, "the pause taken off and the pod CIDRs followed once the Cluster is unpaused", func() (bool, string) {
		ok, msg := podsAre("[10.244.0.0/16]")()
		_, paused := vcl.Annotations[v1alpha1.AnnotationPaused]
		return ok && !paused, fmt.Sprint(msg, " annotations ", vcl.Annotations)
	})

	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c2"}, &v1alpha1.VitalsCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Cluster without the label has a VitalsCluster (or the read failed): %v", err)
	}
	// a Machine of the Cluster that is not enrolled, hooked as if by an enrolment that has ended: released
	left := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c2-md-0", Labels: map[string]string{clusterv1.ClusterNameLabel: "c2"},
		Annotations: map[string]string{clusterapi.MachineDeletionHook: clusterapi.MachineDeletionHookOwner}},
		Spec: clusterv1.MachineSpec{ClusterName: "c2", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("c2-bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: ref.APIGroup, Kind: "OpenStackMachine", Name: "c2-md-0"}}}
	if err := c.Create(ctx, left); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hook taken off a Machine of a Cluster not enrolled", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(left), left); err != nil {
			return false, err.Error()
		}
		_, has := left.Annotations[clusterapi.MachineDeletionHook]
		return !has, fmt.Sprint("annotations ", left.Annotations)
	})

	// A VitalsCluster controlled by an enrolled Cluster but not made by the enrolment (no label): left alone. Its
	// Machines are not held for it (a hook is taken off), and the Cluster's pause does not reach it.
	handID := clusterv1.ContractVersionedObjectReference{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: "c5"}
	hand := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c5", Labels: map[string]string{clusterapi.EnrolLabel: "true"}},
		Spec: clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.246.0.0/16"}}},
			InfrastructureRef: handID}}
	if err := c.Create(ctx, hand); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), hand) })
	handVCL := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c5",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: "c5", UID: hand.UID, Controller: ptr.To(true)}}},
		Spec: v1alpha1.ClusterSpec{DeletionPolicy: v1alpha1.DeletionPolicyDeorbit, PodCIDRs: []v1alpha1.CIDR{"10.246.0.0/16"},
			OpenStack: v1alpha1.OpenStackSpec{RouterID: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"}}}
	if err := c.Create(ctx, handVCL); err != nil {
		t.Fatal(err)
	}
	handMachine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c5-md-0", Labels: map[string]string{clusterv1.ClusterNameLabel: "c5"},
		Annotations: map[string]string{clusterapi.MachineDeletionHook: clusterapi.MachineDeletionHookOwner}},
		Spec: clusterv1.MachineSpec{ClusterName: "c5", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("c5-bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: ref.APIGroup, Kind: "OpenStackMachine", Name: "c5-md-0"}}}
	if err := c.Create(ctx, handMachine); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hook taken off a Machine of a Cluster whose VitalsCluster the enrolment did not make", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(handMachine), handMachine); err != nil {
			return false, err.Error()
		}
		_, has := handMachine.Annotations[clusterapi.MachineDeletionHook]
		return !has, fmt.Sprint("annotations ", handMachine.Annotations)
	})
	hb := hand.DeepCopy()
	metav1.SetMetaDataAnnotation(&hand.ObjectMeta, clusterv1.PausedAnnotation, "")
	if err := c.Patch(ctx, hand, client.MergeFrom(hb)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a pause would be written within a second or two
	if err := c.Get(ctx, client.ObjectKeyFromObject(handVCL), handVCL); err != nil {
		t.Fatal(err)
	}
	if _, paused := handVCL.Annotations[v1alpha1.AnnotationPaused]; paused || handVCL.Labels[v1alpha1.LabelEnrolledBy] != "" {
		t.Errorf("the enrolment acted on a VitalsCluster it did not make: annotations %v, labels %v", handVCL.Annotations, handVCL.Labels)
	}
	hb = hand.DeepCopy()
	delete(hand.Annotations, clusterv1.PausedAnnotation)
	if err := c.Patch(ctx, hand, client.MergeFrom(hb)); err != nil {
		t.Fatal(err)
	}
	// handed over (the label put on by hand): the enrolment's own from then on, its Machine held for it
	vb := handVCL.DeepCopy()
	metav1.SetMetaDataLabel(&handVCL.ObjectMeta, v1alpha1.LabelEnrolledBy, v1alpha1.EnrolledByEnrolment)
	if err := c.Patch(ctx, handVCL, client.MergeFrom(vb)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Machine held once the VitalsCluster is handed over to the enrolment", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(handMachine), handMachine); err != nil {
			return false, err.Error()
		}
		return handMachine.Annotations[clusterapi.MachineDeletionHook] == clusterapi.MachineDeletionHookOwner, fmt.Sprint("annotations ", handMachine.Annotations)
	})

	// Machines of the cluster (no infrastructure behind them): each is hooked as soon as it is seen, before any
	// teardown; one deleted while the Cluster lives (a scale-down) is released and goes.
	machine := func(name string) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
			Spec: clusterv1.MachineSpec{ClusterName: "c1", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("c1-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: ref.APIGroup, Kind: "OpenStackMachine", Name: name}}}
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Machine "+name+" hooked while its Cluster lives", func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
				return false, err.Error()
			}
			return m.Annotations[clusterapi.MachineDeletionHook] == clusterapi.MachineDeletionHookOwner, fmt.Sprint("annotations ", m.Annotations)
		})
		return m
	}
	scaled := machine("c1-md-1")
	start = time.Now()
	if err := c.Delete(ctx, scaled); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a Machine deleted while its Cluster lives released and gone", func() (bool, string) {
		switch err := c.Get(ctx, client.ObjectKeyFromObject(scaled), scaled); {
		case apierrors.IsNotFound(err):
			return true, ""
		case err != nil:
			return false, err.Error()
		}
		return false, fmt.Sprintf("annotations %v, finalizers %v", scaled.Annotations, scaled.Finalizers)
	})
	t.Logf("a Machine deleted while its Cluster lives gone %.1f s after the delete", time.Since(start).Seconds())

	// The VitalsCluster held as deorbit's finalizer would hold it (no deorbit controller runs here).
	const hold = "e2e.vitals/deorbit-at-work"
	m := machine("c1-md-0")
	if ok, msg := get(); !ok {
		t.Fatal(msg)
	}
	b := vcl.DeepCopy()
	vcl.Finalizers = append(vcl.Finalizers, hold)
	if err := c.Patch(ctx, &vcl, client.MergeFrom(b)); err != nil {
		t.Fatal(err)
	}
	// opted out after its enrolment: the VitalsCluster is no longer followed, but kept with its deletionPolicy,
	// and its Machine stays held for the deorbit that policy asks for
	if err := c.Get(ctx, key, cl); err != nil {
		t.Fatal(err)
	}
	bc := cl.DeepCopy()
	cl.Labels[clusterapi.EnrolLabel] = "false"
	if err := c.Patch(ctx, cl, client.MergeFrom(bc)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Cluster's VitalsHealthy taken off when it opts out", healthIs("", ""))
	setPods("10.244.0.0/16", "10.251.0.0/16")
	time.Sleep(3 * time.Second) // a follow, or the hook taken off, would be written within a second or two
	if ok, msg := podsAre("[10.244.0.0/16]")(); !ok {
		t.Errorf("the VitalsCluster of a Cluster opted out still follows it: %s", msg)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
		t.Fatal(err)
	}
	if m.Annotations[clusterapi.MachineDeletionHook] != clusterapi.MachineDeletionHookOwner || !vcl.DeletionTimestamp.IsZero() {
		t.Errorf("opted out: Machine annotations %v, VitalsCluster deleting %v; want the hook kept and the VitalsCluster there", m.Annotations, !vcl.DeletionTimestamp.IsZero())
	}
	// deleting the Cluster (opted out) deletes its VitalsCluster all the same, and while the VitalsCluster is there
	// the Machine keeps its server: the pre-terminate hook holds its deletion, and CAPO's network teardown with it
	uid := vcl.UID
	start = time.Now()
	if err := c.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Machine still held by the deletion hook, the VitalsCluster deleting", func() (bool, string) {
		if ok, msg := get(); !ok {
			return false, msg
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		return !vcl.DeletionTimestamp.IsZero() && m.Annotations[clusterapi.MachineDeletionHook] == clusterapi.MachineDeletionHookOwner && !m.DeletionTimestamp.IsZero(),
			fmt.Sprintf("VitalsCluster deleting %v; Machine annotations %v, deleting %v", !vcl.DeletionTimestamp.IsZero(), m.Annotations, !m.DeletionTimestamp.IsZero())
	})
	time.Sleep(5 * time.Second) // Cluster API and CAPO reconcile the deletion meanwhile
	if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
		t.Fatalf("the held Machine: %v", err)
	}
	if err := c.Get(ctx, key, osc); err != nil {
		t.Fatalf("the OpenStackCluster of a held Machine: %v", err)
	}
	t.Logf("held %.1f s after the delete: the Machine and the OpenStackCluster (finalizers %v) are there", time.Since(start).Seconds(), osc.Finalizers)
	// deorbit releases the VitalsCluster: the hook goes, and everything with it
	b = vcl.DeepCopy()
	vcl.Finalizers = slices.DeleteFunc(vcl.Finalizers, func(f string) bool { return f == hold })
	if err := c.Patch(ctx, &vcl, client.MergeFrom(b)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the VitalsCluster and the Cluster gone", func() (bool, string) {
		var left []string
		for _, o := range []client.Object{&v1alpha1.VitalsCluster{}, &clusterv1.Cluster{}, &infrav1.OpenStackCluster{}} {
			switch err := c.Get(ctx, key, o); {
			case err == nil:
				left = append(left, fmt.Sprintf("%T (finalizers %v)", o, o.GetFinalizers()))
			case !apierrors.IsNotFound(err):
				return false, err.Error()
			}
		}
		return len(left) == 0, fmt.Sprint("left: ", left)
	})
	t.Logf("the Cluster, its OpenStackCluster and its VitalsCluster (uid %s) gone %.1f s after the delete", uid, time.Since(start).Seconds())
}

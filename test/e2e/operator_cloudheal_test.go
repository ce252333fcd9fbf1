package e2e

// cloudheal against the real services: Cinder and Nova (fake drivers) through the cluster's scoped cloud
// (the real tenancy verifier), Cinder behind the fault proxy to count the writes, and a private
// kube-apiserver holding the VitalsCluster and the workload cluster's Nodes and PersistentVolumes, read
// through the real workload access. One pass at a time with a fake clock.

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/attachments"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/cloudheal"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// chFixture is one VitalsCluster with its own network and router, volumes tagged with a cluster name of
// its own, and cloudheal over them.
type chFixture struct {
	t       *testing.T
	c       client.Client // the management and the workload cluster (one private kube-apiserver)
	net     *opNet
	cloud   *openstack.Cloud // direct, for the test's own calls
	bc, cc  *gophercloud.ServiceClient
	cinder  *faultproxy.Proxy
	neutron *faultproxy.Proxy
	nc      *gophercloud.ServiceClient
	cinderP string // the path of Cinder's endpoint at the proxy (/v3/<project>)
	name    string // Cinder CSI's --cluster of the scenario
	ns      string
	key     types.NamespacedName
	clock   *clocktesting.FakeClock
	reg     *prometheus.Registry
	events  *events.FakeRecorder
	rec     *cloudheal.Reconciler
	m       *cloudheal.Metrics
}

func newCHFixture(t *testing.T) *chFixture {
	t.Helper()
	env := testenv.RequireFull(t)
	wl := newFlightWorkload(t)
	f := &chFixture{t: t, c: wl.c, name: "vitals-e2e-ch-" + opRandHex(4)}
	auth := opAuth(t, env)
	f.cloud = opConnect(t, auth, nil)
	f.net = opNewNet(t, f.cloud)
	var err error
	if f.bc, err = f.cloud.Client(openstack.ServiceBlockStorage); err != nil {
		t.Fatal(err)
	}
	f.bc = &gophercloud.ServiceClient{ProviderClient: f.bc.ProviderClient, Endpoint: f.bc.Endpoint, ResourceBase: f.bc.ResourceBase,
		Type: f.bc.Type, Microversion: "3.27"}
	if f.cc, err = f.cloud.Client(openstack.ServiceCompute); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(f.bc.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	f.cinderP = strings.TrimSuffix(u.Path, "/")
	if f.nc, err = f.cloud.Client(openstack.ServiceNetworking); err != nil {
		t.Fatal(err)
	}
	pauth, proxies := opFaultProxy(t, env, f.cloud, openstack.ServiceBlockStorage, openstack.ServiceNetworking)
	f.cinder, f.neutron = proxies[0], proxies[1]
	conn := opConnect(t, pauth, nil)
	ctx := context.Background()
	f.ns = opNamespace(t, f.c)
	if err := f.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "workload"},
		Data: map[string][]byte{"kubeconfig": wl.kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.c.DeleteAllOf(context.Background(), &corev1.Node{})
		_ = f.c.DeleteAllOf(context.Background(), &corev1.PersistentVolume{})
	})
	t.Cleanup(func() {
		// the private kube-apiserver is the test's own: its Services go with it, but not their node ports' groups
		var svcs corev1.ServiceList
		if err := f.c.List(context.Background(), &svcs, client.InNamespace(f.ns)); err == nil {
			for i := range svcs.Items {
				_ = f.c.Delete(context.Background(), &svcs.Items[i])
			}
		}
	})
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1"},
		Spec: v1alpha1.ClusterSpec{
			KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "workload"},
			OpenStack: v1alpha1.OpenStackSpec{RouterID: f.net.Router, ProjectID: f.cloud.ProjectID(), NetworkID: f.net.Network,
				SubnetID: f.net.Subnet, ClusterName: f.name},
			PodCIDRs:    []v1alpha1.CIDR{"198.19.0.0/16"},
			Remediation: v1alpha1.RemediationSpec{MinProofAge: &metav1.Duration{Duration: time.Minute}},
			Controllers: v1alpha1.ControllersSpec{CloudHeal: v1alpha1.CloudHealSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Minute}},
				Repairs: v1alpha1.CloudHealRepairs{StaleAttachments: v1alpha1.StaleAttachmentRepair{
					Timeout: &metav1.Duration{Duration: 2 * time.Minute}}},
			}},
		},
	}
	if err := f.c.Create(ctx, cl); err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	f.key = client.ObjectKeyFromObject(cl)
	f.clock = clocktesting.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	f.reg = prometheus.NewRegistry()
	f.events = events.NewFakeRecorder(1000)
	policy, err := remediation.New(remediation.Options{Clock: f.clock, Recorder: f.events, Metrics: remediation.NewMetrics(f.reg)})
	if err != nil {
		t.Fatal(err)
	}
	policy.Checks().Set(f.key, remediation.CheckCloud, nil)
	wm, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: policy.Checks(), Rules: workload.KubeconfigRules{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wm.Close)
	verifier := tenancy.NewVerifier(tenancy.Options{Secrets: f.c, Clusters: f.c, TrustedNamespaces: []string{f.ns},
		Operator: func(context.Context) (tenancy.Connection, error) { return conn, nil }})
	deps := &pass.Deps{Client: f.c, Tenancy: verifier, Workload: wm, Policy: policy,
		Recorder: func(string) events.EventRecorder { return f.events }, Clock: f.clock}
	f.m = cloudheal.NewMetrics(f.reg)
	if f.rec, err = cloudheal.New(deps, cloudheal.Options{Metrics: f.m, PassMetrics: pass.NewMetrics(cloudheal.Name, f.reg)}); err != nil {
		t.Fatal(err)
	}
	opEventually(t, time.Minute, "workload cluster reachable", func() (bool, string) {
		w, err := wm.For(ctx, cl)
		if err == nil {
			err = w.Healthy()
		}
		return err == nil, fmt.Sprint(err)
	})
	return f
}

// pass runs one pass at the next deadline and returns the cluster after it.
func (f *chFixture) pass() *v1alpha1.VitalsCluster {
	f.t.Helper()
	f.clock.Step(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: f.key}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		f.t.Fatal(err)
	}
	return &cl
}

// volume creates an available volume tagged as Cinder CSI tags the scenario's volumes.
func (f *chFixture) volume(pvc string) string {
	f.t.Helper()
	ctx := context.Background()
	v, err := volumes.Create(ctx, f.bc, volumes.CreateOpts{Size: 1, Name: f.name + "-" + pvc,
		Metadata: map[string]string{ccm.MetadataCluster: f.name, "csi.storage.k8s.io/pvc/name": pvc}}, nil).Extract()
	if err != nil {
		f.t.Fatalf("create volume: %v", err)
	}
	f.t.Cleanup(func() {
		ctx := context.Background()
		if pages, err := attachments.List(f.bc, attachments.ListOpts{VolumeID: v.ID}).AllPages(ctx); err == nil {
			as, _ := attachments.ExtractAttachments(pages)
			for _, a := range as {
				_ = attachments.Delete(ctx, f.bc, a.ID).ExtractErr()
			}
		}
		_ = volumes.Delete(ctx, f.bc, v.ID, volumes.DeleteOpts{Cascade: true}).ExtractErr()
	})
	f.volumeStatus(v.ID, "available")
	return v.ID
}

func (f *chFixture) volumeStatus(id, want string) {
	f.t.Helper()
	opEventually(f.t, 2*time.Minute, "volume "+id+" "+want, func() (bool, string) {
		v, err := volumes.Get(context.Background(), f.bc, id).Extract()
		if err != nil {
			return false, err.Error()
		}
		return v.Status == want, v.Status
	})
}

// attach reserves volume for server through Cinder's attachment API, as the attach of a node does first.
func (f *chFixture) attach(volume, server string) string {
	f.t.Helper()
	a, err := attachments.Create(context.Background(), f.bc, attachments.CreateOpts{VolumeUUID: volume, InstanceUUID: server}).Extract()
	if err != nil {
		f.t.Fatalf("create attachment of volume %s for server %s: %v", volume, server, err)
	}
	return a.ID
}

func (f *chFixture) attachmentExists(id string) bool {
	f.t.Helper()
	_, err := attachments.Get(context.Background(), f.bc, id).Extract()
	if err != nil && !openstack.IsNotFound(err) {
		f.t.Fatalf("read attachment %s: %v", id, err)
	}
	return err == nil
}

// watch counts every write to an attachment at the Cinder proxy.
func (f *chFixture) watch(name, attachment string) {
	f.t.Helper()
	if err := f.cinder.Add(faultproxy.Rule{Name: name, Method: "DELETE", Path: f.cinderP + "/attachments/" + attachment, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: name + "-update", Method: "PUT", Path: f.cinderP + "/attachments/" + attachment + "*", Fault: faultproxy.Pass()}); err != nil {
		f.t.Fatal(err)
	}
}

// node registers a Ready Node naming server, as a kubelet and the cloud provider would.
func (f *chFixture) node(name, server string) {
	f.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + server}}
	if err := f.c.Create(ctx, n); err != nil {
		f.t.Fatalf("create node %s: %v", name, err)
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	if err := f.c.Status().Update(ctx, n); err != nil {
		f.t.Fatalf("node %s status: %v", name, err)
	}
}

// pv registers the PersistentVolume Cinder CSI's provisioner made for volume.
func (f *chFixture) pv(name, volume string) {
	f.t.Helper()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "cinder.csi.openstack.org", VolumeHandle: volume}},
	}}
	if err := f.c.Create(context.Background(), pv); err != nil {
		f.t.Fatalf("create persistent volume %s: %v", name, err)
	}
}

// TestOperatorCloudHealStaleAttachment: a volume reserved for a server that is then deleted is freed once,
// after its timeout and its two-pass proof; a volume reserved for a live server a Ready Node names is never
// touched (counted at the Cinder proxy), and neither is one whose server lives without a Node.
func TestOperatorCloudHealStaleAttachment(t *testing.T) {
	f := newCHFixture(t)
	ctx := context.Background()
	live := f.net.Server(f.cloud, 10)
	f.node("ch-live-"+opRandHex(3), live)
	bare := f.net.Server(f.cloud, 11) // a server no Node names: not this repair's
	gone := f.net.Server(f.cloud, 12)
	volLive, volBare, volStale := f.volume("live"), f.volume("bare"), f.volume("stale")
	attLive, attBare, attStale := f.attach(volLive, live), f.attach(volBare, bare), f.attach(volStale, gone)
	f.volumeStatus(volStale, "reserved")
	pvName := "pv-" + f.name
	f.pv(pvName, volStale)
	f.watch("live", attLive)
	f.watch("bare", attBare)
	f.watch("stale", attStale)
	if err := servers.Delete(ctx, f.cc, gone).ExtractErr(); err != nil {
		t.Fatalf("delete server %s: %v", gone, err)
	}
	opEventually(t, 2*time.Minute, "server "+gone+" gone", func() (bool, string) {
		_, err := servers.Get(ctx, f.cc, gone).Extract()
		return openstack.IsNotFound(err), fmt.Sprint(err)
	})

	// First sighting: reported, recorded, not acted on.
	cl := f.pass()
	cd := condition(cl, v1alpha1.ConditionVolumeAttachmentsHealthy)
	if cd.Status != metav1.ConditionFalse || cd.Reason != cloudheal.ReasonStaleAttachments {
		t.Fatalf("first pass: VolumeAttachmentsHealthy = %s/%s (%s), want False/StaleAttachments", cd.Status, cd.Reason, cd.Message)
	}
	if st := cl.Status.CloudHeal; st == nil || len(st.StaleAttachments) != 1 || st.StaleAttachments[0].AttachmentID != attStale || st.StaleAttachments[0].Passes != 1 {
		t.Fatalf("first pass: stale attachments %+v, want %s seen once", cl.Status.CloudHeal, attStale)
	}
	if !f.attachmentExists(attStale) || f.cinder.Matched("stale") != 0 {
		t.Fatalf("first pass removed the attachment (deletes at the proxy: %d)", f.cinder.Matched("stale"))
	}
	// Second sighting, one interval later, but inside the timeout (2m from the first): still held.
	f.pass()
	if !f.attachmentExists(attStale) || f.cinder.Matched("stale") != 0 {
		t.Fatalf("second pass inside the timeout removed the attachment")
	}
	// Past the timeout: removed, once.
	cl = f.pass()
	if f.attachmentExists(attStale) {
		t.Fatalf("third pass: the stale attachment %s is still there (condition: %+v)", attStale, condition(cl, v1alpha1.ConditionVolumeAttachmentsHealthy))
	}
	f.volumeStatus(volStale, "available")
	if n := f.cinder.Matched("stale"); n != 1 {
		t.Fatalf("deletes of the stale attachment at the proxy: %d, want 1", n)
	}
	cd = condition(cl, v1alpha1.ConditionVolumeAttachmentsHealthy)
	if cd.Status != metav1.ConditionTrue || cd.Reason != cloudheal.ReasonNoStaleAttachments {
		t.Fatalf("after the removal: VolumeAttachmentsHealthy = %s/%s (%s), want True", cd.Status, cd.Reason, cd.Message)
	}
	if cl.Status.CloudHeal.DetachedTotal != 1 || len(cl.Status.CloudHeal.StaleAttachments) != 0 {
		t.Fatalf("after the removal: status %+v", cl.Status.CloudHeal)
	}
	if n := testutil.ToFloat64(f.m.Detached.WithLabelValues(f.key.String())); n != 1 {
		t.Fatalf("vitals_cloudheal_attachments_removed_total = %v, want 1", n)
	}
	// The Events: on the VitalsCluster, and on the PersistentVolume in the workload cluster.
	found := false
	for len(f.events.Events) > 0 && !found {
		found = strings.Contains(<-f.events.Events, cloudheal.ReasonAttachmentRemoved)
	}
	if !found {
		t.Fatal("no StaleAttachmentRemoved Event on the VitalsCluster")
	}
	var evs corev1.EventList
	if err := f.c.List(ctx, &evs, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	found = false
	for _, e := range evs.Items {
		found = found || e.InvolvedObject.Kind == "PersistentVolume" && e.InvolvedObject.Name == pvName && e.Reason == cloudheal.ReasonAttachmentRemoved
	}
	if !found {
		t.Fatalf("no StaleAttachmentRemoved Event on PersistentVolume %s", pvName)
	}
	// More passes change nothing, and the live node's and the bare server's volumes were never written.
	f.pass()
	f.pass()
	if n := f.cinder.Matched("stale"); n != 1 {
		t.Fatalf("deletes of the stale attachment at the proxy after more passes: %d, want 1", n)
	}
	for _, w := range []string{"live", "live-update", "bare", "bare-update"} {
		if n := f.cinder.Matched(w); n != 0 {
			t.Fatalf("writes to attachment %q at the proxy: %d, want 0", w, n)
		}
	}
	if !f.attachmentExists(attLive) || !f.attachmentExists(attBare) {
		t.Fatal("the live node's or the bare server's attachment is gone")
	}
}

// lbService creates a LoadBalancer Service in the workload cluster (the API server allocates its node
// ports) and returns it as stored.
func (f *chFixture) lbService(name string) *corev1.Service {
	f.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)}},
	}}
	if err := f.c.Create(context.Background(), svc); err != nil {
		f.t.Fatalf("create service %s: %v", name, err)
	}
	return svc
}

// lbGroup creates the security group the cloud controller manager would make for svc (described as
// desc) with rules, deleted at the end of the test; it returns the group's ID and its rules' IDs.
func (f *chFixture) lbGroup(svc *corev1.Service, desc string, rs []openstack.SecurityGroupRule) (string, []string) {
	f.t.Helper()
	ctx := context.Background()
	g, err := groups.Create(ctx, f.nc, groups.CreateOpts{Name: cloudheal.LBGroupName(svc), Description: desc}).Extract()
	if err != nil {
		f.t.Fatalf("create security group: %v", err)
	}
	f.t.Cleanup(func() { _ = groups.Delete(context.Background(), f.nc, g.ID).ExtractErr() })
	var ids []string
	for _, r := range rs {
		cr, err := rules.Create(ctx, f.nc, rules.CreateOpts{SecGroupID: g.ID, Direction: rules.RuleDirection(r.Direction), EtherType: rules.RuleEtherType(r.EtherType),
			Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax, RemoteIPPrefix: r.RemoteIPPrefix}).Extract()
		if err != nil {
			f.t.Fatalf("create rule %+v: %v", r, err)
		}
		ids = append(ids, cr.ID)
	}
	return g.ID, ids
}

// groupRules reads a group's ingress rules.
func (f *chFixture) groupRules(group string) []rules.SecGroupRule {
	f.t.Helper()
	pages, err := rules.List(f.nc, rules.ListOpts{SecGroupID: group, Direction: "ingress"}).AllPages(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	rs, err := rules.ExtractRules(pages)
	if err != nil {
		f.t.Fatal(err)
	}
	return rs
}

// TestOperatorCloudHealLBSecurityGroups: a rule deleted from the cloud controller manager's load-balancer
// group is restored once (counted at the Neutron proxy), a rule beyond the Service's is reported and kept,
// and a group of the same name that the cloud controller manager did not make is never written.
func TestOperatorCloudHealLBSecurityGroups(t *testing.T) {
	f := newCHFixture(t)
	ctx := context.Background()
	cidr := f.net.prefix + ".0/24"
	ours, theirs := f.lbService("web"), f.lbService("other")
	want := cloudheal.LBRules(ours, cidr, []string{cidr})
	if len(want) != 2 {
		t.Fatalf("want rules %+v: expected one per node port", want)
	}
	extra := openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "0.0.0.0/0"}
	group, ids := f.lbGroup(ours, cloudheal.LBGroupDescription(ours, f.name), append(append([]openstack.SecurityGroupRule(nil), want...), extra))
	// the rule wiped (cloud-provider-openstack #2699)
	if err := rules.Delete(ctx, f.nc, ids[0]).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	foreign, _ := f.lbGroup(theirs, "made by hand", nil)
	for name, g := range map[string]string{"ours": group, "foreign": foreign} {
		if err := f.neutron.Add(faultproxy.Rule{Name: name, Method: "POST", Path: "/v2.0/security-group-rules", Body: `"security_group_id":"` + g + `"`, Fault: faultproxy.Pass()}); err != nil {
			t.Fatal(err)
		}
	}

	cl := f.pass()
	cd := condition(cl, v1alpha1.ConditionLBSecurityGroupsHealthy)
	if n := f.neutron.Matched("ours"); n != 1 {
		t.Fatalf("rule creations in the cloud controller manager's group: %d, want 1 (condition %s/%s: %s)", n, cd.Status, cd.Reason, cd.Message)
	}
	have := f.groupRules(group)
	for _, w := range want {
		found := false
		for _, r := range have {
			found = found || r.Protocol == w.Protocol && r.PortRangeMin == w.PortRangeMin && r.RemoteIPPrefix == w.RemoteIPPrefix
		}
		if !found {
			t.Fatalf("rule %+v not in the group after the pass: %+v", w, have)
		}
	}
	// the rule beyond the Service's: reported, kept
	if cd.Status != metav1.ConditionFalse || cd.Reason != cloudheal.ReasonRulesDrifted || !strings.Contains(cd.Message, "22-22") {
		t.Fatalf("after the restore: %s = %s/%s (%s), want False/RulesDrifted naming port 22", v1alpha1.ConditionLBSecurityGroupsHealthy, cd.Status, cd.Reason, cd.Message)
	}
	if !strings.Contains(cd.Message, f.ns+"/other") {
		t.Fatalf("the foreign group is not reported: %s", cd.Message)
	}
	if cl.Status.CloudHeal.RulesRestoredTotal != 1 {
		t.Fatalf("rulesRestoredTotal = %d, want 1", cl.Status.CloudHeal.RulesRestoredTotal)
	}
	f.pass()
	f.pass()
	if n := f.neutron.Matched("ours"); n != 1 {
		t.Fatalf("rule creations after more passes: %d, want 1", n)
	}
	if n := f.neutron.Matched("foreign"); n != 0 {
		t.Fatalf("rule creations in the group the cloud controller manager did not make: %d, want 0", n)
	}
	if len(f.groupRules(foreign)) != 0 {
		t.Fatal("the foreign group got a rule")
	}
	if n := len(f.groupRules(group)); n != 3 {
		t.Fatalf("the group holds %d ingress rules, want 3 (two restored or kept, the extra one kept)", n)
	}
}

// scopeTenancy gives every cluster one proven scope (the simulator's project).
type scopeTenancy struct{ scope *tenancy.Scope }

func (scopeTenancy) Forget(types.NamespacedName) {}

func (s scopeTenancy) Resolve(context.Context, *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	return s.scope, nil
}

// serviceEvents are the reasons of the Events on a Service of the workload cluster.
func serviceEvents(t *testing.T, c client.Client, ns, name string) []string {
	t.Helper()
	var evs corev1.EventList
	if err := c.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Service" && e.InvolvedObject.Name == name {
			out = append(out, e.Type+"/"+e.Reason+": "+e.Message)
		}
	}
	return out
}

// TestOperatorCloudHealLBConvergenceSim: a load balancer left PENDING_CREATE (a stopped octavia-worker) or
// ERROR (which only an administrator sets and clears) turns LoadBalancersConverged False after its timeout,
// with a Warning Event on the Service naming the administrator's command, and True again, with a Normal
// Event, once it converges. The simulator shows the states (SetLoadBalancerStatus, as Octavia's database
// would hold them); the workload cluster is a private kube-apiserver.
func TestOperatorCloudHealLBConvergenceSim(t *testing.T) {
	wl := newFlightWorkload(t)
	ctx := context.Background()
	sim, seeded, conn := simTenant(t, 39, "lbconv", 1)
	spec := v1alpha1.OpenStackSpec{RouterID: seeded.RouterID, NetworkID: seeded.NetworkID, SubnetID: seeded.SubnetID, ClusterName: "lbconv-" + opRandHex(3)}
	scope, err := tenancy.ScopeOf(ctx, conn, spec, "the test's credentials")
	if err != nil {
		t.Fatal(err)
	}
	ns := opNamespace(t, wl.c)
	t.Cleanup(func() { _ = wl.c.DeleteAllOf(context.Background(), &corev1.Node{}) })
	// cloudheal reaches the workload cluster only as deploy/manifests/workload-rbac.yaml's ServiceAccount: its
	// informers and its Events on the Service prove the manifest's rules (workload_rbac_test.go)
	rb := wlRBAC(t, wl.kubeconfig, ns)
	if err := wl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workload"}, Data: map[string][]byte{"kubeconfig": rb.Kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	f := &chFixture{t: t, c: wl.c, ns: ns, name: spec.ClusterName}
	f.node("lbconv-"+opRandHex(3), seeded.Nodes[0].ID)
	svc := f.lbService("web")
	lc, err := conn.Client(openstack.ServiceLoadBalancer)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: ccm.LoadBalancerName(spec.ClusterName, svc.Namespace, svc.Name), VipSubnetID: seeded.SubnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	// octavia-worker stopped mid-create: the load balancer stays PENDING_CREATE
	if err := sim.SetLoadBalancerStatus(lb.ID, "PENDING_CREATE", "OFFLINE"); err != nil {
		t.Fatal(err)
	}
	cl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}, Spec: v1alpha1.ClusterSpec{
		KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "workload"}, OpenStack: spec, PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
		Controllers: v1alpha1.ControllersSpec{CloudHeal: v1alpha1.CloudHealSpec{
			ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Minute}},
			// the simulator has no Cinder attachment API: the stale-attachments repair is off (and reads nothing)
			Repairs: v1alpha1.CloudHealRepairs{LoadBalancers: v1alpha1.LBConvergenceRepair{Timeout: &metav1.Duration{Duration: 2 * time.Minute}},
				StaleAttachments: v1alpha1.StaleAttachmentRepair{RepairSpec: v1alpha1.RepairSpec{Enabled: new(bool)}}},
		}}}}
	if err := wl.c.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	f.key = client.ObjectKeyFromObject(cl)
	f.clock = clocktesting.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	f.events = events.NewFakeRecorder(1000)
	f.reg = prometheus.NewRegistry()
	policy, err := remediation.New(remediation.Options{Clock: f.clock, Recorder: f.events, Metrics: remediation.NewMetrics(f.reg)})
	if err != nil {
		t.Fatal(err)
	}
	policy.Checks().Set(f.key, remediation.CheckCloud, nil)
	wm, err := workload.NewManager(workload.Options{Secrets: wl.c, Checks: policy.Checks(), Rules: workload.KubeconfigRules{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wm.Close)
	f.m = cloudheal.NewMetrics(f.reg)
	if f.rec, err = cloudheal.New(&pass.Deps{Client: wl.c, Tenancy: scopeTenancy{scope}, Workload: wm, Policy: policy,
		Recorder: func(string) events.EventRecorder { return f.events }, Clock: f.clock},
		cloudheal.Options{Metrics: f.m, PassMetrics: pass.NewMetrics(cloudheal.Name, f.reg)}); err != nil {
		t.Fatal(err)
	}
	opEventually(t, time.Minute, "workload cluster reachable", func() (bool, string) {
		w, err := wm.For(ctx, cl)
		if err == nil {
			err = w.Healthy()
		}
		return err == nil, fmt.Sprint(err)
	})
	converged := func(when string, want metav1.ConditionStatus, reason string) *v1alpha1.VitalsCluster {
		t.Helper()
		cl := f.pass()
		cd := condition(cl, v1alpha1.ConditionLoadBalancersConverged)
		if cd.Status != want || cd.Reason != reason {
			t.Fatalf("%s: LoadBalancersConverged = %s/%s (%s), want %s/%s", when, cd.Status, cd.Reason, cd.Message, want, reason)
		}
		return cl
	}
	converged("first sighting", metav1.ConditionTrue, cloudheal.ReasonConverged)
	converged("inside the timeout", metav1.ConditionTrue, cloudheal.ReasonConverged)
	if evs := serviceEvents(t, wl.c, ns, "web"); len(evs) != 0 {
		t.Fatalf("Events on the Service inside the timeout: %v", evs)
	}
	cl = converged("past the timeout", metav1.ConditionFalse, cloudheal.ReasonNotConverged)
	cd := condition(cl, v1alpha1.ConditionLoadBalancersConverged)
	if !strings.Contains(cd.Message, "PENDING_CREATE") || !strings.Contains(cd.Message, "openstack loadbalancer failover "+lb.ID) {
		t.Fatalf("the message names neither the state nor the administrator's command: %s", cd.Message)
	}
	if n := testutil.ToFloat64(f.m.LBNotConverged.WithLabelValues(f.key.String())); n != 1 {
		t.Fatalf("vitals_cloudheal_lb_not_converged = %v, want 1", n)
	}
	evs := serviceEvents(t, wl.c, ns, "web")
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning/"+cloudheal.ReasonLBNotConverged) {
		t.Fatalf("Events on the Service: %v, want one Warning %s", evs, cloudheal.ReasonLBNotConverged)
	}
	converged("still stuck", metav1.ConditionFalse, cloudheal.ReasonNotConverged)
	if evs := serviceEvents(t, wl.c, ns, "web"); len(evs) != 1 {
		t.Fatalf("Events on the Service after another pass: %v, want still one", evs)
	}
	// octavia-worker back: the load balancer converges
	if err := sim.SetLoadBalancerStatus(lb.ID, "ACTIVE", "ONLINE"); err != nil {
		t.Fatal(err)
	}
	cl = converged("converged", metav1.ConditionTrue, cloudheal.ReasonConverged)
	if evs := serviceEvents(t, wl.c, ns, "web"); len(evs) != 2 || !strings.HasPrefix(evs[1], "Normal/"+cloudheal.ReasonLBConverged) && !strings.HasPrefix(evs[0], "Normal/"+cloudheal.ReasonLBConverged) {
		t.Fatalf("Events on the Service after it converged: %v, want a Normal %s", evs, cloudheal.ReasonLBConverged)
	}
	if len(cl.Status.CloudHeal.StuckLoadBalancers) != 0 {
		t.Fatalf("stuck load balancers after it converged: %+v", cl.Status.CloudHeal.StuckLoadBalancers)
	}
	// ERROR, which only an administrator clears: reported after the timeout, with failover named
	if err := sim.SetLoadBalancerStatus(lb.ID, "ERROR", "ERROR"); err != nil {
		t.Fatal(err)
	}
	converged("ERROR, first sighting", metav1.ConditionTrue, cloudheal.ReasonConverged)
	converged("ERROR, inside the timeout", metav1.ConditionTrue, cloudheal.ReasonConverged)
	cl = converged("ERROR past the timeout", metav1.ConditionFalse, cloudheal.ReasonNotConverged)
	if cd := condition(cl, v1alpha1.ConditionLoadBalancersConverged); !strings.Contains(cd.Message, "provisioning status ERROR") ||
		!strings.Contains(cd.Message, "openstack loadbalancer failover "+lb.ID) {
		t.Fatalf("ERROR: %s", cd.Message)
	}
}

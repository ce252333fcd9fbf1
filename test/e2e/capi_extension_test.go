package e2e

//lint:file-ignore SA1019 Cluster API's hook requests carry a v1beta1 Cluster (api/runtime/hooks/v1alpha1)

// Vitals as Cluster API's Runtime Extension for the BeforeClusterDelete lifecycle hook: Cluster API's own
// extension server (exp/runtime/server) over real TLS, asked on the wire as Cluster API's runtime client asks it
// (discovery, then the hook's path with a BeforeClusterDeleteRequest), answering from VitalsClusters read from a
// real kube-apiserver.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimecatalog "sigs.k8s.io/cluster-api/exp/runtime/catalog"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/internal/test/testcert"
)

// extServe starts the extension server on a free port of 127.0.0.1 with a fresh self-signed certificate for that
// address, and returns its base URL and a client that trusts the certificate (as the ExtensionConfig's caBundle
// makes Cluster API's runtime client trust it).
func extServe(t *testing.T, e *clusterapi.Extension) (string, *http.Client) {
	t.Helper()
	dir, crt := extCert(t)
	port := freePort(t)
	srv, err := clusterapi.NewExtensionServer(e, server.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("extension server: %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	opEventually(t, 30*time.Second, "the extension server serving", func() (bool, string) {
		resp, err := hc.Get(base + "/")
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return true, ""
	})
	return base, hc
}

// extCert writes a fresh self-signed serving certificate for 127.0.0.1 into a directory as the extension server
// reads it (tls.crt, tls.key), and returns the directory and the certificate (its own CA).
func extCert(t *testing.T) (dir string, crt []byte) {
	t.Helper()
	pair := testcert.Issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "vitals-runtime-extension"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, nil)
	crt, key := pair.CertPEM(), pair.KeyPEM()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, crt
}

// extCall POSTs body (marshalled unless it is []byte) to path and decodes the answer into out.
func extCall(t *testing.T, hc *http.Client, url string, body, out any) {
	t.Helper()
	data, ok := body.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := hc.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s %v", url, resp.StatusCode, got, err)
	}
	if err := json.Unmarshal(got, out); err != nil {
		t.Fatalf("POST %s: answer %s: %v", url, got, err)
	}
}

// TestCAPIRuntimeExtension: discovery lists the BeforeClusterDelete handler (failure policy Fail); the hook
// answers "retry after" while the Cluster's own VitalsCluster is not deleting (for NotDeletedAfter from the
// Cluster's deletion at most: then nothing is going to delete it, and the deletion goes on) or deorbit is in a
// phase (when its next step is due), and lets the deletion go on when deorbit is done, gave up, or there is
// nothing of Vitals to wait for (no VitalsCluster, one another Cluster of the name controls, one the enrolment
// did not make, deletionPolicy Orphan); an oversized request is refused with Failure.
func TestCAPIRuntimeExtension(t *testing.T) {
	parallel(t)
	_, c := opPrivateKube(t)
	ns := opNamespace(t, c)
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Now().Truncate(time.Second)) // the status's times are whole seconds
	base, hc := extServe(t, &clusterapi.Extension{Reader: c, Clock: clock})

	var disc runtimehooksv1.DiscoveryResponse
	extCall(t, hc, base+runtimecatalog.GVHToPath(runtimecatalog.GroupVersionHook{Group: runtimehooksv1.GroupVersion.Group, Version: runtimehooksv1.GroupVersion.Version,
		Hook: "Discovery"}, ""), &runtimehooksv1.DiscoveryRequest{TypeMeta: metav1.TypeMeta{APIVersion: runtimehooksv1.GroupVersion.String(), Kind: "DiscoveryRequest"}}, &disc)
	if disc.Status != runtimehooksv1.ResponseStatusSuccess || len(disc.Handlers) != 1 || disc.Handlers[0].Name != clusterapi.ExtensionHandlerName ||
		disc.Handlers[0].RequestHook.Hook != "BeforeClusterDelete" || disc.Handlers[0].FailurePolicy == nil || *disc.Handlers[0].FailurePolicy != runtimehooksv1.FailurePolicyFail {
		t.Fatalf("discovery: %+v", disc)
	}
	hookURL := base + runtimecatalog.GVHToPath(runtimecatalog.GroupVersionHook{Group: runtimehooksv1.GroupVersion.Group, Version: runtimehooksv1.GroupVersion.Version,
		Hook: "BeforeClusterDelete"}, clusterapi.ExtensionHandlerName)
	// askDeleted asks for the Cluster deleted at del (nil: the request does not say), ask without a deletion
	askDeleted := func(name string, uid types.UID, del *metav1.Time) runtimehooksv1.BeforeClusterDeleteResponse {
		t.Helper()
		req := &runtimehooksv1.BeforeClusterDeleteRequest{TypeMeta: metav1.TypeMeta{APIVersion: runtimehooksv1.GroupVersion.String(), Kind: "BeforeClusterDeleteRequest"},
			Cluster: clusterv1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, DeletionTimestamp: del}}}
		var resp runtimehooksv1.BeforeClusterDeleteResponse
		extCall(t, hc, hookURL, req, &resp)
		return resp
	}
	ask := func(name string, uid types.UID) runtimehooksv1.BeforeClusterDeleteResponse {
		t.Helper()
		return askDeleted(name, uid, nil)
	}
	want := func(resp runtimehooksv1.BeforeClusterDeleteResponse, status runtimehooksv1.ResponseStatus, retry int32, msg string) {
		t.Helper()
		if resp.Status != status || resp.RetryAfterSeconds != retry || !strings.Contains(resp.Message, msg) {
			t.Errorf("answer %s retry %d %q, want %s retry %d and a message containing %q", resp.Status, resp.RetryAfterSeconds, resp.Message, status, retry, msg)
		}
	}

	// The enrolment's VitalsCluster: named like the Cluster, controlled by it, with the enrolment's label.
	const uid = types.UID("5a0c4e52-9a1e-4d8a-b7a4-3f0e2d1c6b7a")
	vcl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod", Finalizers: []string{"e2e.vitals/hold"},
		Labels:          map[string]string{v1alpha1.LabelEnrolledBy: v1alpha1.EnrolledByEnrolment},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: clusterapi.ClusterKind, Name: "prod", UID: uid, Controller: ptr.To(true)}}},
		Spec: v1alpha1.ClusterSpec{DeletionPolicy: v1alpha1.DeletionPolicyDeorbit, PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
			OpenStack: v1alpha1.OpenStackSpec{ProjectID: "4b7e0f2a9c1d4e3f8a6b5c7d9e0f1a2b", RouterID: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"}}}
	if err := c.Create(ctx, vcl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var cur v1alpha1.VitalsCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(vcl), &cur); err == nil {
			controllerutil.RemoveFinalizer(&cur, "e2e.vitals/hold")
			_ = c.Update(ctx, &cur)
		}
	})
	want(ask("prod", uid), runtimehooksv1.ResponseStatusSuccess, 5, "is not deleting yet")
	want(ask("prod", "another-uid"), runtimehooksv1.ResponseStatusSuccess, 0, "is not controlled by this Cluster")
	want(ask("staging", uid), runtimehooksv1.ResponseStatusSuccess, 0, "no VitalsCluster")
	// one a Cluster controls but the enrolment did not make (no label): the enrolment never deletes it, not waited for
	const handUID = types.UID("0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b")
	hand := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hand",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: clusterapi.ClusterKind, Name: "hand", UID: handUID, Controller: ptr.To(true)}}},
		Spec: v1alpha1.ClusterSpec{DeletionPolicy: v1alpha1.DeletionPolicyDeorbit, PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
			OpenStack: v1alpha1.OpenStackSpec{ProjectID: "4b7e0f2a9c1d4e3f8a6b5c7d9e0f1a2b", RouterID: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"}}}
	if err := c.Create(ctx, hand); err != nil {
		t.Fatal(err)
	}
	want(askDeleted("hand", handUID, &metav1.Time{Time: clock.Now()}), runtimehooksv1.ResponseStatusSuccess, 0, "was not made by the enrolment")
	// not deleting while its Cluster is: waited for NotDeletedAfter, then let go (nothing deletes it)
	recent, long := metav1.NewTime(clock.Now().Add(-time.Minute)), metav1.NewTime(clock.Now().Add(-clusterapi.NotDeletedAfter-time.Minute))
	want(askDeleted("prod", uid, &recent), runtimehooksv1.ResponseStatusSuccess, 5, "the hook waits for that until")
	want(askDeleted("prod", uid, &long), runtimehooksv1.ResponseStatusSuccess, 0, "nothing deletes it")

	if err := c.Delete(ctx, vcl); err != nil {
		t.Fatal(err)
	}
	want(ask("prod", uid), runtimehooksv1.ResponseStatusSuccess, 5, "deorbit is starting")
	setStatus := func(st *v1alpha1.DeorbitStatus) {
		t.Helper()
		var cur v1alpha1.VitalsCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(vcl), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Status.Deorbit = st
		if err := c.Status().Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
	}
	next := metav1.NewTime(clock.Now().Add(12 * time.Second))
	setStatus(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseClaims, NextAttemptTime: &next, Counts: v1alpha1.DeorbitCounts{Total: 9, Done: 4}})
	want(ask("prod", uid), runtimehooksv1.ResponseStatusSuccess, 12, "4 of 9 resources done")
	setStatus(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseDone, Counts: v1alpha1.DeorbitCounts{Total: 9, Done: 9}})
	want(ask("prod", uid), runtimehooksv1.ResponseStatusSuccess, 0, "deorbit done")

	// Orphan: nothing to wait for, whatever the status says.
	setStatus(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseClaims, NextAttemptTime: &next})
	var cur v1alpha1.VitalsCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(vcl), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	if err := c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	want(ask("prod", uid), runtimehooksv1.ResponseStatusSuccess, 0, "deletionPolicy Orphan")

	// A request beyond the bound: Failure (Cluster API's failure policy Fail: the deletion waits).
	big := []byte(`{"apiVersion":"hooks.runtime.cluster.x-k8s.io/v1alpha1","kind":"BeforeClusterDeleteRequest","cluster":{"metadata":{"name":"` +
		strings.Repeat("x", clusterapi.MaxExtensionRequest) + `"}}}`)
	var resp runtimehooksv1.BeforeClusterDeleteResponse
	extCall(t, hc, hookURL, big, &resp)
	want(resp, runtimehooksv1.ResponseStatusFailure, 0, "error reading request")
}

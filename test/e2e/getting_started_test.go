package e2e

// docs/getting-started.md, followed as a person would: its shell blocks run in order by bash, as written,
// in a fresh directory where "vitals" is this checkout, with the tools it names on PATH (kubectl built from
// its module by hack/kubectl-build.sh, helm, skopeo, make, go) and its variables set to the test services':
// the registry is one of the test's own (go-containerregistry's, plain HTTP, declared insecure to skopeo
// through CONTAINERS_REGISTRIES_CONF as a registries.conf does), the cluster a private kube-apiserver, the
// OpenStack project and router those of the workload cluster of the deorbit tests, whose kube-apiserver is
// reached through a TCP forwarder on a non-loopback address of this host (a kubeconfig naming a loopback
// server is refused, as it must be) with tls-server-name set to a name of its certificate.
//
// The steps make the release (whose artifacts are then checked: relCheckArtifacts), push its images, install
// the chart, create the Secrets and the VitalsCluster, and check it with vitals doctor and kubectl wait. One
// step cannot run here as it does on a real cluster: no kubelet runs the chart's pods, so for the rollout
// step the test runs the operator's pod itself, on this host: the binary of the pushed image for this
// platform, with the Deployment's arguments (its ports moved to free ones) and a kubeconfig. The
// VitalsCluster then reaches CloudVerified and Ready, which the document's own kubectl wait steps check.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// gsBlock is one fenced shell block of the document and what the test does with it.
type gsBlock struct {
	line   int
	body   string
	action string // "run", "skip", "env" (the test's own values), "operator" (the test runs the pod)
	why    string
}

var gsMarker = regexp.MustCompile(`^<!-- test: (skip|operator|env): (.+) -->$`)

// gsBlocks reads the sh blocks of docs/getting-started.md with the marker on the line before each.
func gsBlocks(t *testing.T) []gsBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(opRepoRoot(), "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []gsBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		b := gsBlock{line: i + 1, action: "run"}
		if i > 0 {
			if m := gsMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.action, b.why = m[1], m[2]
			}
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		b.body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// gsLock keeps two runs of this test on one machine apart: the release's name (vitals) names cluster-scoped
// objects.
func gsLock(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "vitals-e2e-getting-started.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
}

// gsHostIP is an IPv4 address of this host that is not loopback (nor link-local).
func gsHostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	prereq.Missing(t, "this host has no IPv4 address besides loopback: a workload kubeconfig on loopback is refused")
	return ""
}

// gsForward forwards connections to ip:<free port> to target until the test ends.
func gsForward(t *testing.T, ip, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c) }()
				_, _ = io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().String()
}

func gsFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// gsImageBinary extracts the file path of the image for this host's platform from the OCI archive.
func gsImageBinary(t *testing.T, archive, path, dst string) {
	t.Helper()
	dir := relUntar(t, archive)
	img := relPlatformImage(t, dir, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	data, ok := relImageFiles(t, img)[path]
	if !ok {
		t.Fatalf("%s: no %s in the image", archive, path)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestGettingStarted(t *testing.T) {
	prereq.Short(t, "makes the release (every binary for two platforms)")
	parallel(t) // the workload cluster is held from the first step after the release's (below)
	gsLock(t)
	helm := testenv.Helm(t)
	// The management cluster is a kube-apiserver of its own: the operator the guide installs watches every
	// namespace, and on the shared one would act on the other scenarios' clusters.
	kube, c := opPrivateKube(t)
	kubeconfig := kube.KubeconfigPath()
	w := testenv.Workload(t)
	wcfg := w.Config(t)
	skopeo := testenv.Skopeo(t)
	kb := exec.Command(filepath.Join(opRepoRoot(), "hack", "kubectl-build.sh"))
	kb.Stderr = os.Stderr
	kubectlOut, err := kb.Output()
	if err != nil {
		t.Fatalf("hack/kubectl-build.sh: %v", err)
	}
	kubectl := strings.TrimSpace(string(kubectlOut))

	// The commit make release labels its artifacts with: the checkout's, before the steps run.
	head, err := exec.Command("git", "-C", opRepoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head))

	dir := testenv.ShortDir(t, "gs")
	if err := os.Symlink(opRepoRoot(), filepath.Join(dir, "vitals")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, ".bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{kubectl, helm} {
		if err := os.Symlink(tool, filepath.Join(bin, filepath.Base(tool))); err != nil {
			t.Fatal(err)
		}
	}
	// The test's registry is plain HTTP, and Debian's skopeo (1.9) reads no registries.conf but
	// /etc/containers': the skopeo on the steps' PATH adds --dest-tls-verify=false to a copy, which a user's
	// registry (TLS) does not need.
	shim := "#!/bin/sh\nif [ \"$1\" = copy ]; then shift; exec " + skopeo + " copy --dest-tls-verify=false \"$@\"; fi\nexec " + skopeo + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "skopeo"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}

	// The registry, and a registries.conf that declares it plain HTTP.
	reg := httptest.NewServer(registry.New())
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	regConf := filepath.Join(dir, ".registries.conf")
	if err := os.WriteFile(regConf, []byte(fmt.Sprintf("[[registry]]\nlocation = %q\ninsecure = true\n", host)), 0o600); err != nil {
		t.Fatal(err)
	}

	// The cluster's credentials and kubeconfig, as the document's ./clouds.yaml and ./prod-eu.kubeconfig.
	clouds := opCloudsYAML(w.Tenant.AuthURL, w.Tenant.Username, w.Tenant.Password, w.Tenant.ProjectName)
	ca := wcfg.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(wcfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	fwd := gsForward(t, gsHostIP(t), strings.TrimPrefix(wcfg.Host, "https://"))
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: prod-eu, cluster: {server: "https://%s", tls-server-name: kubernetes, certificate-authority-data: %q}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: prod-eu, context: {cluster: prod-eu, user: u}}]
current-context: prod-eu
`, fwd, base64.StdEncoding.EncodeToString(ca), wcfg.BearerToken)
	for name, body := range map[string]string{"clouds.yaml": clouds, "prod-eu.kubeconfig": kc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	suffix := opRandHex(3)
	vars := map[string]string{
		"REGISTRY":  host + "/platform",
		"NS":        "vitals-gs-" + suffix,
		"CLUSTERS":  "clusters-gs-" + suffix,
		"ROUTER_ID": w.RouterID,
		"SUBNET_ID": w.SubnetID,
		"POD_CIDR":  fmt.Sprintf("10.%d.0.0/16", 160+rand.IntN(90)),
	}
	cache := os.Getenv("VITALS_CACHE") // the built tools (helm), not the fresh HOME's
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(base, "vitals")
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "CONTAINERS_REGISTRIES_CONF="+regConf, "VITALS_CACHE="+cache,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir,
		"HELM_CACHE_HOME="+filepath.Join(dir, ".helm", "cache"), "HELM_CONFIG_HOME="+filepath.Join(dir, ".helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(dir, ".helm", "data"),
		"GOPATH="+gsGoEnv(t, "GOPATH"), "GOCACHE="+gsGoEnv(t, "GOCACHE"), "GOMODCACHE="+gsGoEnv(t, "GOMODCACHE"))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	t.Cleanup(func() { gsCleanup(t, c, helm, kubeconfig, vars) })

	// The blocks, one shell session per stretch between the harness's own steps; the variables the steps
	// export carry over.
	state := filepath.Join(dir, ".state.sh")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	flush := func() {
		t.Helper()
		if script.Len() == 0 {
			return
		}
		sh := "set -euo pipefail\n. " + state + "\n" + script.String() + "\nexport -p > " + state + ".new\n"
		cmd := exec.Command("bash", "-c", sh)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		t.Logf("steps (%s):\n%s", time.Since(start).Round(time.Second), gsTail(out.String(), 6000))
		if err != nil {
			t.Fatalf("docs/getting-started.md's steps failed: %v", err)
		}
		if err := os.Rename(state+".new", state); err != nil {
			t.Fatal(err)
		}
		script.Reset()
	}
	ran, holding := 0, false
	for _, b := range gsBlocks(t) {
		if ran == 1 && !holding {
			// The release (the guide's first step) is built before the workload cluster is taken: the
			// other scenarios on it go on meanwhile.
			flush()
			hold(t, &workloadCluster)
			holding = true
		}
		switch b.action {
		case "skip", "env":
			t.Logf("docs/getting-started.md:%d not run (%s): %s", b.line, b.action, b.why)
		case "operator":
			flush()
			gsRunOperator(t, c, dir, kubeconfig, vars["NS"], state)
			t.Logf("docs/getting-started.md:%d: %s", b.line, b.why)
		default:
			fmt.Fprintf(&script, "echo '+ docs/getting-started.md:%d'\n%s", b.line, b.body)
			ran++
		}
	}
	flush()
	if ran < 6 {
		t.Fatalf("%d blocks of docs/getting-started.md ran: the extraction is broken", ran)
	}

	// What the steps reached: the VitalsCluster proven and read, the images where the chart pulls them,
	// and the release's artifacts as make release promises them.
	var vc v1alpha1.VitalsCluster
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: vars["CLUSTERS"], Name: "prod-eu"}, &vc); err != nil {
		t.Fatal(err)
	}
	for _, cond := range vc.Status.Conditions {
		t.Logf("condition %s=%s (%s): %s", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	if vc.Status.ProjectID != w.ProjectID {
		t.Errorf("status.projectID %q, want the workload project %s", vc.Status.ProjectID, w.ProjectID)
	}
	version := gsStateVar(t, state, "VERSION")
	var d appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: vars["NS"], Name: "vitals-operator"}, &d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != vars["REGISTRY"]+"/vitals:"+version {
		t.Errorf("the operator's image %s, want %s/vitals:%s (the pushed one)", img, vars["REGISTRY"], version)
	}
	for _, repo := range []string{"vitals", "vitals-agent"} {
		ref := "docker://" + vars["REGISTRY"] + "/" + repo + ":" + version
		var idx struct {
			Manifests []struct {
				Platform struct{ OS, Architecture string }
			}
		}
		if err := json.Unmarshal(relSkopeo(t, skopeo, "inspect", "--tls-verify=false", "--raw", ref), &idx); err != nil || len(idx.Manifests) != 2 {
			t.Errorf("%s: %+v, %v; want the index of the two platforms", ref, idx, err)
		}
	}
	relCheckArtifacts(t, filepath.Join(opRepoRoot(), "_out", "release"), version, commit)
}

// gsRunOperator stands in for the kubelet: it runs the operator's container of the Deployment the chart
// installed (its image's binary for this host, its arguments, its ports moved to free ones) and waits until
// the operator is ready, as the rollout step would.
func gsRunOperator(t *testing.T, c client.Client, dir, kubeconfig, ns, state string) {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "vitals-operator"}, &d); err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	version := gsStateVar(t, state, "VERSION")
	bin := filepath.Join(dir, ".operator")
	gsImageBinary(t, filepath.Join(opRepoRoot(), "_out", "release", "vitals-operator-"+version+".oci.tar"), "/vitals", bin)
	health := gsFreePort(t)
	args := []string{}
	for _, a := range append(append([]string{}, ctr.Command...), ctr.Args...) {
		switch {
		case strings.HasPrefix(a, "--health-port="):
			a = "--health-port=" + strconv.Itoa(health)
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=127.0.0.1:0"
		}
		args = append(args, a)
	}
	args = append(args, "--kubeconfig="+kubeconfig)
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, ".operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	for _, e := range ctr.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("the operator's log:\n%s", gsTail(string(b), 8000))
		}
	})
	t.Logf("the operator's pod, run here: %s %s", ctr.Image, strings.Join(args, " "))
	opEventually(t, 3*time.Minute, "the operator ready", func() (bool, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", health))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200, string(b)
	})
}

// gsStateVar reads a variable the steps exported.
func gsStateVar(t *testing.T, state, name string) string {
	t.Helper()
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^declare -x ` + name + `="([^"]*)"$`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("the steps exported no %s", name)
	}
	return string(m[1])
}

func gsGoEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func gsTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// gsCleanup releases the VitalsCluster (its deorbit runs in dry run: the finalizer is removed), uninstalls
// the release and deletes the namespaces.
func gsCleanup(t *testing.T, c client.Client, helm, kubeconfig string, vars map[string]string) {
	ctx := context.Background()
	var vc v1alpha1.VitalsCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: vars["CLUSTERS"], Name: "prod-eu"}, &vc); err == nil {
		patch := client.RawPatch("application/json-patch+json", []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`))
		_ = c.Patch(ctx, &vc, patch)
		_ = c.Delete(ctx, &vc)
	}
	_, _ = helmCmd(t, helm, "uninstall", "vitals", "--kubeconfig", kubeconfig, "--namespace", vars["NS"]).CombinedOutput()
	for _, ns := range []string{vars["CLUSTERS"], vars["NS"]} {
		_ = c.Delete(ctx, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
}

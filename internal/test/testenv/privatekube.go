package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeServer is a private etcd + kube-apiserver for one test, on free ports of 127.0.0.1. Stop and Start keep
// the data, the ports, the serving certificate and the token, so clients made before a restart work after it
// (the reason this is not envtest, whose control plane picks new ports and directories on every start).
type KubeServer struct {
	dir       string
	token     string
	apiPort   int
	etcdURL   string
	etcd      *process
	apiserver *process
	cfg       *rest.Config
	kubecfg   string
}

// PrivateKube starts a private kube-apiserver with its own etcd from the binaries in KUBEBUILDER_ASSETS and
// stops both when t ends; flags are added to the apiserver's (e.g. "--feature-gates=ShardedListAndWatch=true").
// It skips t (fails it when VITALS_TESTENV_REQUIRED=1) when the binaries are absent.
func PrivateKube(t testing.TB, flags ...string) *KubeServer {
	t.Helper()
	short(t, "private kube-apiserver test")
	s := load()
	s.checkFile(t)
	v, from := s.group(EnvAssets, EnvAssets)
	assets := v[EnvAssets]
	if assets == "" {
		unavailable(t, "kube-apiserver binaries not available: %s (%s unset)", makeHint, EnvAssets)
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			unavailable(t, "kube-apiserver binaries not available in %s (from %s): %v; %s", assets, from, err, makeHint)
		}
	}
	k, err := newKubeServer(t.TempDir(), assets, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Stop(); err != nil {
			t.Errorf("stop private kube-apiserver: %v", err)
		}
	})
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	return k
}

func newKubeServer(dir, assets string, flags ...string) (*KubeServer, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := io.ReadFull(rand.Reader, tok); err != nil {
		return nil, fmt.Errorf("generate token: %w", err)
	}
	k := &KubeServer{dir: dir, token: hex.EncodeToString(tok), apiPort: ports[2]}
	if err := k.writeCredentials(); err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	k.etcdURL = etcdURL
	k.etcd = &process{
		name: "etcd (private)",
		path: filepath.Join(assets, "etcd"),
		args: []string{
			"--name=vitals", "--data-dir=" + filepath.Join(dir, "etcd-data"),
			"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=vitals=" + peerURL,
			"--unsafe-no-fsync", "--log-level=warn",
		},
		logPath: filepath.Join(dir, "etcd.log"),
	}
	k.apiserver = &process{
		name: "kube-apiserver (private)",
		path: filepath.Join(assets, "kube-apiserver"),
		args: []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(k.apiPort),
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-cluster-ip-range=10.0.0.0/24",
			// no controller-manager runs: no ServiceAccount tokens, no endpoint reconciling (a loopback
			// advertise address is refused by the reconciler)
			"--disable-admission-plugins=ServiceAccount",
			"--endpoint-reconciler-type=none",
			"--allow-privileged=true",
		},
		logPath: filepath.Join(dir, "kube-apiserver.log"),
	}
	k.apiserver.args = append(k.apiserver.args, flags...)
	k.kubecfg = filepath.Join(dir, "kubeconfig")
	return k, nil
}

func (k *KubeServer) writeCredentials() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode service account key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	line := k.token + ",admin,admin-uid,system:masters\n"
	if err := os.WriteFile(filepath.Join(k.dir, "tokens.csv"), []byte(line), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// Start starts etcd and the apiserver (again, keeping their data) and waits for /readyz.
func (k *KubeServer) Start() error {
	if err := k.etcd.start(); err != nil {
		return err
	}
	if err := k.etcd.waitReady(60*time.Second, func(ctx context.Context) error { return httpOK(ctx, probeClient, k.etcdURL+"/health", "") }); err != nil {
		_ = k.etcd.stop(5 * time.Second)
		return err
	}
	if err := k.apiserver.start(); err != nil {
		_ = k.etcd.stop(5 * time.Second)
		return err
	}
	// readiness probe of our own server, whose self-signed certificate is created at its first start
	insecure := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	readyz := k.Host() + "/readyz"
	if err := k.apiserver.waitReady(120*time.Second, func(ctx context.Context) error { return httpOK(ctx, insecure, readyz, k.token) }); err != nil {
		_ = k.Stop()
		return err
	}
	if k.cfg == nil {
		if err := k.writeKubeconfig(); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops the apiserver, then etcd; the data stays for the next Start.
func (k *KubeServer) Stop() error {
	errA := k.apiserver.stop(15 * time.Second)
	errE := k.etcd.stop(10 * time.Second)
	if errA != nil {
		return errA
	}
	return errE
}

// Host returns the apiserver's URL (https://127.0.0.1:PORT).
func (k *KubeServer) Host() string { return "https://127.0.0.1:" + strconv.Itoa(k.apiPort) }

// Config returns a new client configuration for the private apiserver (token of group system:masters).
func (k *KubeServer) Config() *rest.Config { return rest.CopyConfig(k.cfg) }

// KubeconfigPath returns the path of a kubeconfig file for the private apiserver.
func (k *KubeServer) KubeconfigPath() string { return k.kubecfg }

func (k *KubeServer) writeKubeconfig() error {
	c := clientcmdapi.NewConfig()
	c.Clusters["private"] = &clientcmdapi.Cluster{Server: k.Host(), CertificateAuthority: filepath.Join(k.dir, "certs", "apiserver.crt")}
	c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: k.token}
	c.Contexts["private"] = &clientcmdapi.Context{Cluster: "private", AuthInfo: "admin", Namespace: "default"}
	c.CurrentContext = "private"
	if err := clientcmd.WriteToFile(*c, k.kubecfg); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.kubecfg)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", k.kubecfg, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	k.cfg = cfg
	return nil
}

// probeClient keeps no idle connections, so that probes leave no goroutines behind (goleak-friendly).
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func httpOK(ctx context.Context, c *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %w", url, resp.Status, errNotReady)
	}
	return nil
}

package workload

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/testcert"
)

// Strings that stand for the contents of a Secret: no error message may hold any of them.
const (
	secretServer  = "https://api.secret-cluster.example:6443"
	secretToken   = "s3cr3t-t0k3n-value"
	secretName    = "secret-entry-name"
	secretPath    = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	secretCommand = "/usr/bin/steal-credentials"
)

// kubeconfig renders a one-context kubeconfig; cluster and user are extra YAML lines (indented 4)
// added to the entries.
func kubeconfig(cluster, user string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: ` + secretName + `
  cluster:
    server: ` + secretServer + `
` + cluster + `
users:
- name: ` + secretName + `
  user:
` + user + `
contexts:
- name: ` + secretName + `
  context:
    cluster: ` + secretName + `
    user: ` + secretName + `
current-context: ` + secretName + `
`
}

func TestParseKubeconfig(t *testing.T) {
	pair := testcert.CA(t, "test")
	cert, key := pair.CertPEM(), pair.KeyPEM()
	ca := "    certificate-authority-data: " + base64.StdEncoding.EncodeToString(cert)
	token := "    token: " + secretToken
	certUser := "    client-certificate-data: " + base64.StdEncoding.EncodeToString(cert) +
		"\n    client-key-data: " + base64.StdEncoding.EncodeToString(key)
	tests := []struct {
		name   string
		data   string
		rules  KubeconfigRules
		reason string // "" = accepted
		want   string // in the message
	}{
		{name: "token and inline CA", data: kubeconfig(ca, token)},
		{name: "client certificate data", data: kubeconfig(ca, certUser)},
		{name: "no CA: system roots", data: kubeconfig("", token)},
		{name: "impersonation", data: kubeconfig(ca, token+"\n    as: someone\n    as-groups: [g]")},
		{name: "exec plugin", data: kubeconfig(ca, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: "+secretCommand),
			reason: ReasonRefusedKubeconfig, want: "users[0]: exec (a credential plugin) is refused"},
		{name: "auth provider", data: kubeconfig(ca, "    auth-provider:\n      name: oidc\n      config:\n        cmd-path: "+secretCommand),
			reason: ReasonRefusedKubeconfig, want: "users[0]: auth-provider is refused"},
		{name: "token file", data: kubeconfig(ca, "    tokenFile: "+secretPath),
			reason: ReasonRefusedKubeconfig, want: "users[0]: tokenFile (a file) is refused"},
		{name: "token file in other case", data: kubeconfig(ca, "    TokenFile: "+secretPath),
			reason: ReasonRefusedKubeconfig, want: "tokenFile (a file) is refused"},
		{name: "client certificate file", data: kubeconfig(ca, "    client-certificate: "+secretPath+"\n    client-key-data: "+base64.StdEncoding.EncodeToString(key)),
			reason: ReasonRefusedKubeconfig, want: "users[0]: client-certificate (a file) is refused"},
		{name: "client key file", data: kubeconfig(ca, "    client-certificate-data: "+base64.StdEncoding.EncodeToString(cert)+"\n    client-key: "+secretPath),
			reason: ReasonRefusedKubeconfig, want: "users[0]: client-key (a file) is refused"},
		{name: "certificate authority file", data: kubeconfig("    certificate-authority: "+secretPath, token),
			reason: ReasonRefusedKubeconfig, want: "clusters[0]: certificate-authority (a file) is refused"},
		{name: "insecure skip verify", data: kubeconfig("    insecure-skip-tls-verify: true", token),
			reason: ReasonRefusedKubeconfig, want: "clusters[0]: insecure-skip-tls-verify is refused"},
		{name: "insecure skip verify allowed", data: kubeconfig("    insecure-skip-tls-verify: true", token), rules: KubeconfigRules{AllowInsecure: true}},
		{name: "proxy url", data: kubeconfig(ca+"\n    proxy-url: http://10.0.0.1:3128", token),
			reason: ReasonRefusedKubeconfig, want: "clusters[0]: proxy-url is refused"},
		{name: "several refusals at once", data: kubeconfig("    certificate-authority: "+secretPath, "    tokenFile: "+secretPath),
			reason: ReasonRefusedKubeconfig, want: "clusters[0]: certificate-authority (a file) is refused: give certificate-authority-data; users[0]: tokenFile (a file) is refused"},
		{name: "not YAML", data: "clusters: [\n  - {name: " + secretName + "\n", reason: ReasonInvalidKubeconfig, want: "not YAML"},
		{name: "a string, not a kubeconfig", data: secretToken, reason: ReasonInvalidKubeconfig, want: "not a kubeconfig"},
		{name: "wrong type quotes nothing", data: "clusters: " + secretToken + "\n", reason: ReasonInvalidKubeconfig, want: "field clusters: expected a list"},
		{name: "number quotes nothing", data: "current-context: 12345678901234567890\nclusters: []\n", reason: ReasonInvalidKubeconfig, want: "field current-context: expected a string"},
		{name: "empty", data: "", reason: ReasonInvalidKubeconfig, want: "empty"},
		{name: "other kind", data: "kind: Secret\n", reason: ReasonInvalidKubeconfig, want: "kind is not Config"},
		{name: "no current context", data: strings.Replace(kubeconfig(ca, token), "current-context: "+secretName, "current-context: other", 1),
			reason: ReasonInvalidKubeconfig, want: "current-context names no context"},
		{name: "two clusters of one name", data: strings.Replace(kubeconfig(ca, token), "users:", "- name: "+secretName+"\n  cluster:\n    server: https://other.example\nusers:", 1),
			reason: ReasonInvalidKubeconfig, want: "clusters[0] and clusters[1] have the same name"},
		{name: "context names a missing user", data: strings.Replace(kubeconfig(ca, token), "    user: "+secretName, "    user: other", 1),
			reason: ReasonInvalidKubeconfig, want: "names a user the kubeconfig does not hold"},
		{name: "http server", data: strings.Replace(kubeconfig("", token), "https://", "http://", 1),
			reason: ReasonRefusedKubeconfig, want: "server: http is refused"},
		{name: "metadata address", data: strings.Replace(kubeconfig(ca, token), secretServer, "https://169.254.169.254", 1),
			reason: ReasonRefusedKubeconfig, want: "link-local"},
		{name: "link-local IPv6", data: strings.Replace(kubeconfig(ca, token), secretServer, "https://[fe80::1]:6443", 1),
			reason: ReasonRefusedKubeconfig, want: "link-local"},
		{name: "loopback address", data: strings.Replace(kubeconfig(ca, token), secretServer, "https://127.0.0.1:6443", 1),
			reason: ReasonRefusedKubeconfig, want: "loopback address is refused"},
		{name: "loopback IPv6", data: strings.Replace(kubeconfig(ca, token), secretServer, "https://[::1]:6443", 1),
			reason: ReasonRefusedKubeconfig, want: "--allow-loopback-workload"},
		{name: "metadata address with loopback allowed", data: strings.Replace(kubeconfig(ca, token), secretServer, "https://169.254.169.254", 1),
			rules: KubeconfigRules{AllowLoopback: true}, reason: ReasonRefusedKubeconfig, want: "link-local"},
		{name: "user info in the server", data: strings.Replace(kubeconfig(ca, token), "https://", "https://u:p@", 1),
			reason: ReasonRefusedKubeconfig, want: "user info"},
		{name: "other scheme", data: strings.Replace(kubeconfig(ca, token), "https://", "file://", 1),
			reason: ReasonInvalidKubeconfig, want: "scheme must be https"},
		{name: "CA not PEM", data: kubeconfig("    certificate-authority-data: "+base64.StdEncoding.EncodeToString([]byte(secretToken)), token),
			reason: ReasonInvalidKubeconfig, want: "certificate-authority-data holds no PEM certificate"},
		{name: "certificate without key", data: kubeconfig(ca, "    client-certificate-data: "+base64.StdEncoding.EncodeToString(cert)),
			reason: ReasonInvalidKubeconfig, want: "go together"},
		{name: "token and password", data: kubeconfig(ca, token+"\n    username: u\n    password: "+secretToken),
			reason: ReasonInvalidKubeconfig, want: "exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseKubeconfig([]byte(tt.data), tt.rules)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if cfg.Host != secretServer {
					t.Fatalf("host %q", cfg.Host)
				}
				if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
					t.Fatalf("the configuration refers to files or plugins: %+v", cfg)
				}
				return
			}
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("got %v (%T), want an *Error", err, err)
			}
			if we.Reason != tt.reason || !strings.Contains(we.Message, tt.want) {
				t.Fatalf("got %s: %s\nwant %s containing %q", we.Reason, we.Message, tt.reason, tt.want)
			}
			for _, s := range []string{secretServer, "secret-cluster", secretToken, secretName, secretPath, secretCommand, "12345678901234567890", "10.0.0.1"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("the error echoes the Secret's contents (%q): %v", s, err)
				}
			}
		})
	}
}

// An exec plugin in an entry the current context does not use is refused all the same: the whole file
// is checked.
func TestParseKubeconfigChecksUnusedEntries(t *testing.T) {
	data := kubeconfig("", "    token: "+secretToken) + `
`
	data = strings.Replace(data, "contexts:", `- name: other
  user:
    exec:
      command: `+secretCommand+`
contexts:`, 1)
	_, err := ParseKubeconfig([]byte(data), KubeconfigRules{})
	if ReasonOf(err) != ReasonRefusedKubeconfig || !strings.Contains(err.Error(), "users[1]: exec") {
		t.Fatalf("got %v, want users[1] refused", err)
	}
}

func TestParseKubeconfigSingleContextWithoutCurrent(t *testing.T) {
	data := strings.Replace(kubeconfig("", "    token: "+secretToken), "current-context: "+secretName, "", 1)
	cfg, err := ParseKubeconfig([]byte(data), KubeconfigRules{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != secretToken {
		t.Fatal("token not taken")
	}
}

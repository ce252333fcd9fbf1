package workload

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

// KubeconfigRules say what a kubeconfig from a tenant's Secret may ask for beyond the safe default.
type KubeconfigRules struct {
	// AllowInsecure accepts insecure-skip-tls-verify and http:// servers (default: refused).
	AllowInsecure bool
	// AllowLoopback accepts servers on loopback addresses (default: refused: from the operator, a
	// loopback address is the operator's own pod, or its node with host networking, never a tenant's
	// cluster). The operator sets it with --allow-loopback-workload.
	AllowLoopback bool
}

// ParseKubeconfig turns the kubeconfig held in a tenant's Secret into a client configuration for its
// current context. It reads nothing but data: it refuses exec credential plugins and auth providers (they
// run code or write files in the operator), every file reference (certificate-authority,
// client-certificate, client-key, tokenFile: they would read the operator's own files, such as its service
// account token, and send them to the tenant's server), proxy-url (it would route the operator's requests
// anywhere), a server on a link-local address (cloud metadata) and, unless rules allow them, a server on
// a loopback address, insecure-skip-tls-verify and http:// servers. Every entry of the file is checked, not only the current
// context's. Errors are *Error (ReasonInvalidKubeconfig or ReasonRefusedKubeconfig) that name fields by
// position and never quote the data.
func ParseKubeconfig(data []byte, rules KubeconfigRules) (*rest.Config, error) {
	var kc clientcmdv1.Config
	if err := decodeKubeconfig(data, &kc); err != nil {
		return nil, err
	}
	if kc.Kind != "" && kc.Kind != "Config" {
		return nil, errorf(ReasonInvalidKubeconfig, "kind is not Config")
	}
	var refused, invalid []string
	for i, c := range kc.Clusters {
		r, v := checkCluster(c.Cluster, rules)
		refused = append(refused, prefixed(fmt.Sprintf("clusters[%d]", i), r)...)
		invalid = append(invalid, prefixed(fmt.Sprintf("clusters[%d]", i), v)...)
	}
	for i, u := range kc.AuthInfos {
		r, v := checkUser(u.AuthInfo)
		refused = append(refused, prefixed(fmt.Sprintf("users[%d]", i), r)...)
		invalid = append(invalid, prefixed(fmt.Sprintf("users[%d]", i), v)...)
	}
	if len(refused) > 0 {
		return nil, errorf(ReasonRefusedKubeconfig, "%s", strings.Join(refused, "; "))
	}
	if len(invalid) > 0 {
		return nil, errorf(ReasonInvalidKubeconfig, "%s", strings.Join(invalid, "; "))
	}
	ctx, err := currentContext(&kc)
	if err != nil {
		return nil, err
	}
	ci, err := named(kc.Clusters, func(c clientcmdv1.NamedCluster) string { return c.Name }, ctx.Cluster, "clusters",
		"the current context names a cluster the kubeconfig does not hold")
	if err != nil {
		return nil, err
	}
	cl := kc.Clusters[ci].Cluster
	cfg := &rest.Config{
		Host: cl.Server,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cl.TLSServerName,
			Insecure:   cl.InsecureSkipTLSVerify,
			CAData:     cl.CertificateAuthorityData,
		},
		DisableCompression: cl.DisableCompression,
	}
	if ctx.AuthInfo != "" {
		ui, err := named(kc.AuthInfos, func(u clientcmdv1.NamedAuthInfo) string { return u.Name }, ctx.AuthInfo, "users",
			"the current context names a user the kubeconfig does not hold")
		if err != nil {
			return nil, err
		}
		u := kc.AuthInfos[ui].AuthInfo
		cfg.CertData, cfg.KeyData = u.ClientCertificateData, u.ClientKeyData
		cfg.BearerToken = u.Token
		cfg.Username, cfg.Password = u.Username, u.Password
		cfg.Impersonate = rest.ImpersonationConfig{UserName: u.Impersonate, UID: u.ImpersonateUID,
			Groups: u.ImpersonateGroups, Extra: u.ImpersonateUserExtra}
	}
	return cfg, nil
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// decodeKubeconfig decodes YAML or JSON into kc. Parser messages quote the input ("cannot unmarshal !!str
// `...`"), so none is passed on: only a line number, or the field whose value has the wrong type.
func decodeKubeconfig(data []byte, kc *clientcmdv1.Config) error {
	if len(strings.TrimSpace(string(data))) == 0 {
		return errorf(ReasonInvalidKubeconfig, "the kubeconfig is empty")
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
			return errorf(ReasonInvalidKubeconfig, "not YAML: syntax error at line %s", m[1])
		}
		return errorf(ReasonInvalidKubeconfig, "not YAML")
	}
	if err := json.Unmarshal(j, kc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return errorf(ReasonInvalidKubeconfig, "not a kubeconfig: expected a mapping with clusters, users and contexts")
			}
			return errorf(ReasonInvalidKubeconfig, "field %s: expected %s", te.Field, jsonType(te.Type.Kind().String()))
		}
		return errorf(ReasonInvalidKubeconfig, "not a kubeconfig")
	}
	return nil
}

func jsonType(kind string) string {
	switch kind {
	case "slice":
		return "a list (or base64 data)"
	case "struct", "map":
		return "a mapping"
	case "bool":
		return "true or false"
	}
	return "a " + kind
}

// checkCluster returns what is refused and what is invalid in one cluster entry.
func checkCluster(c clientcmdv1.Cluster, rules KubeconfigRules) (refused, invalid []string) {
	if c.CertificateAuthority != "" {
		refused = append(refused, "certificate-authority (a file) is refused: give certificate-authority-data")
	}
	if c.ProxyURL != "" {
		refused = append(refused, "proxy-url is refused: the operator reaches the server directly")
	}
	if c.InsecureSkipTLSVerify && !rules.AllowInsecure {
		refused = append(refused, "insecure-skip-tls-verify is refused: give certificate-authority-data (or start the operator with --allow-insecure-workload)")
	}
	if c.InsecureSkipTLSVerify && len(c.CertificateAuthorityData) > 0 {
		invalid = append(invalid, "insecure-skip-tls-verify and certificate-authority-data exclude each other")
	}
	if len(c.CertificateAuthorityData) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CertificateAuthorityData) {
		invalid = append(invalid, "certificate-authority-data holds no PEM certificate")
	}
	r, v := checkServer(c.Server, rules)
	return append(refused, r...), append(invalid, v...)
}

// checkServer accepts an https URL (http only when rules allow it) with a host, no user info, no query.
func checkServer(server string, rules KubeconfigRules) (refused, invalid []string) {
	if server == "" {
		return nil, []string{"server is empty"}
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, []string{"server is not a URL such as https://host:6443"}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !rules.AllowInsecure {
			refused = append(refused, "server: http is refused (credentials in clear text): use https")
		}
	default:
		return nil, []string{"server: the scheme must be https"}
	}
	if u.User != nil {
		refused = append(refused, "server: user info in the URL is refused")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		invalid = append(invalid, "server: a query or fragment is not allowed")
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if rules.forbidden(ip) {
			refused = append(refused, "server: link-local, multicast and unspecified addresses are refused")
		} else if rules.loopbackRefused(ip) {
			refused = append(refused, "server: a loopback address is refused (it is the operator's own host; allowed with --allow-loopback-workload)")
		}
	}
	return refused, invalid
}

// forbidden: addresses a tenant's server may never have. Link-local covers the cloud metadata service
// (169.254.169.254).
func (KubeconfigRules) forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified()
}

// loopbackRefused: ip is a loopback address and the rules do not allow them.
func (r KubeconfigRules) loopbackRefused(ip netip.Addr) bool {
	return !r.AllowLoopback && ip.Unmap().IsLoopback()
}

// checkUser returns what is refused and what is invalid in one user entry.
func checkUser(u clientcmdv1.AuthInfo) (refused, invalid []string) {
	if u.Exec != nil {
		refused = append(refused, "exec (a credential plugin) is refused: it would run a command in the operator; give token or client-certificate-data")
	}
	if u.AuthProvider != nil {
		refused = append(refused, "auth-provider is refused: give token or client-certificate-data")
	}
	if u.TokenFile != "" {
		refused = append(refused, "tokenFile (a file) is refused: give token")
	}
	if u.ClientCertificate != "" {
		refused = append(refused, "client-certificate (a file) is refused: give client-certificate-data")
	}
	if u.ClientKey != "" {
		refused = append(refused, "client-key (a file) is refused: give client-key-data")
	}
	if u.Token != "" && (u.Username != "" || u.Password != "") {
		invalid = append(invalid, "token and username/password exclude each other")
	}
	if (len(u.ClientCertificateData) > 0) != (len(u.ClientKeyData) > 0) {
		invalid = append(invalid, "client-certificate-data and client-key-data go together")
	} else if len(u.ClientCertificateData) > 0 {
		if _, err := tls.X509KeyPair(u.ClientCertificateData, u.ClientKeyData); err != nil {
			invalid = append(invalid, "client-certificate-data and client-key-data are not a PEM certificate and its key")
		}
	}
	return refused, invalid
}

// currentContext returns the context named by current-context, or the only context when none is named.
func currentContext(kc *clientcmdv1.Config) (clientcmdv1.Context, error) {
	if kc.CurrentContext == "" {
		if len(kc.Contexts) == 1 {
			return kc.Contexts[0].Context, nil
		}
		return clientcmdv1.Context{}, errorf(ReasonInvalidKubeconfig, "current-context is empty and the kubeconfig holds %d contexts", len(kc.Contexts))
	}
	i, err := named(kc.Contexts, func(c clientcmdv1.NamedContext) string { return c.Name }, kc.CurrentContext, "contexts",
		"current-context names no context of the kubeconfig")
	if err != nil {
		return clientcmdv1.Context{}, err
	}
	return kc.Contexts[i].Context, nil
}

func prefixed(prefix string, msgs []string) []string {
	for i, m := range msgs {
		msgs[i] = prefix + ": " + m
	}
	return msgs
}

// named finds the one entry called name in the kubeconfig's list (its field name, for the messages,
// which give positions only, never the name); missing is the message when there is none.
func named[T any](items []T, nameOf func(T) string, name, list, missing string) (int, error) {
	found := -1
	for i, it := range items {
		if nameOf(it) != name {
			continue
		}
		if found >= 0 {
			return -1, errorf(ReasonInvalidKubeconfig, "%s[%d] and %s[%d] have the same name", list, found, list, i)
		}
		found = i
	}
	if found < 0 {
		return -1, errorf(ReasonInvalidKubeconfig, "%s", missing)
	}
	return found, nil
}

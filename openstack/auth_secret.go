package openstack

// A clouds.yaml from a Secret is input from whoever can write that Secret, read by a process that holds
// other credentials. AuthFromSecretCloudsYAML therefore reads only the YAML it is given: no file (cacert,
// cert, key, clouds-public.yaml profiles, secure.yaml), no environment variable; and its errors name the
// source, the line and the field with what was expected, never a value: a reference to the wrong key of
// a Secret must not print that key's contents into a status, an Event or a log.

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vitalsproject/vitals/config"
)

// ErrUnsafeCloudsYAML is wrapped by errors for a clouds.yaml from a Secret that asks for something the
// operator will not do for it (read a file).
var ErrUnsafeCloudsYAML = errors.New("not allowed in a credentials Secret")

// cloudFileKeys are the keys of a cloud entry that name files on the reader's machine.
var cloudFileKeys = []string{"cacert", "cert", "key", "profile", "cloud"}

// AuthFromSecretCloudsYAML reads one cloud of a clouds.yaml held in memory (a Secret's value). Its cacert
// may be the PEM bundle itself, never a path. source
// names it in errors, e.g. "secret team-a/openstack key clouds.yaml". Errors are *config.Error values
// that say where and what was expected, and never hold any part of data.
func AuthFromSecretCloudsYAML(data []byte, cloud, source string) (Auth, error) {
	return authFromSecret(data, cloud, source, "", false)
}

// AuthFromSecretCloudsYAMLWithCA is AuthFromSecretCloudsYAML with the CA bundle given apart (caPEM, PEM), as
// CAPO's identity Secret holds it under its own key: the cloud entry's cacert (a path on CAPO's machine, or
// inline) is then not read. An empty caPEM is AuthFromSecretCloudsYAML.
func AuthFromSecretCloudsYAMLWithCA(data []byte, cloud, source, caPEM string) (Auth, error) {
	return authFromSecret(data, cloud, source, caPEM, false)
}

// AuthFromWorkloadCloudsYAML is AuthFromSecretCloudsYAML for a clouds.yaml of a workload cluster's Secret (the
// cloud controller manager's, Cinder CSI's), whose credentials are only ever tried against the Keystone the
// cluster's own credentials proved, with that connection's TLS settings: its cacert, cert and key name files of
// the consumer's pod and are ignored (never read), not refused. data larger than MaxCloudConfSize is refused.
func AuthFromWorkloadCloudsYAML(data []byte, cloud, source string) (Auth, error) {
	if len(data) > MaxCloudConfSize {
		return Auth{}, &config.Error{File: source, Msg: fmt.Sprintf("%v: %d bytes (expected at most %d)", ErrTooLarge, len(data), MaxCloudConfSize), Err: ErrTooLarge}
	}
	return authFromSecret(data, cloud, source, "", true)
}

func authFromSecret(data []byte, cloud, source, caPEM string, ignoreFiles bool) (Auth, error) {
	fail := func(line int, field, format string, args ...any) (Auth, error) {
		return Auth{}, &config.Error{File: source, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fail(yamlErrorLine(err), "", "not valid YAML (expected a clouds.yaml: a mapping with a clouds section)")
	}
	if len(doc.Content) == 0 {
		return fail(0, "", "empty (expected a clouds.yaml: a mapping with a clouds section)")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fail(root.Line, "", "not a mapping (expected a clouds.yaml: a mapping with a clouds section)")
	}
	clouds := config.ValueNode(root, "clouds")
	if clouds == nil {
		return fail(root.Line, "clouds", "missing (expected a clouds.yaml: a mapping with a clouds section)")
	}
	if clouds.Kind != yaml.MappingNode {
		return fail(clouds.Line, "clouds", "not a mapping (expected one entry per cloud name)")
	}
	entry := config.ValueNode(clouds, cloud)
	field := "clouds." + cloud
	if entry == nil {
		return fail(clouds.Line, field, "no such cloud (set spec.openstack.cloud to the entry's name)")
	}
	if entry.Kind != yaml.MappingNode {
		return fail(entry.Line, field, "not a mapping (expected auth, region_name, interface ...)")
	}
	var c Credentials
	// cacert may hold the CA bundle itself (PEM): that is data, not a file, and is used.
	if v := config.ValueNode(entry, "cacert"); v != nil && v.Kind == yaml.ScalarNode && strings.HasPrefix(strings.TrimSpace(v.Value), "-----BEGIN") {
		c.CAPEM = v.Value
	}
	if caPEM != "" {
		c.CAPEM = caPEM
	}
	if ignoreFiles {
		c.CAPEM = ""
	}
	for _, k := range cloudFileKeys {
		if n := config.KeyNode(entry, k); n != nil && !(k == "cacert" && c.CAPEM != "") && !ignoreFiles {
			return Auth{}, &config.Error{File: source, Line: n.Line, Field: field + "." + k,
				Msg: fmt.Sprintf("%v: it names a file or profile of the operator's machine, which the operator does not read for a Secret", ErrUnsafeCloudsYAML)}
		}
	}
	str := func(parent *yaml.Node, name string, dst *string) error {
		n := config.ValueNode(parent, name)
		if n == nil {
			return nil
		}
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float") {
			return &config.Error{File: source, Line: n.Line, Field: fieldOf(field, parent, entry, name), Msg: "not a string"}
		}
		*dst = n.Value
		return nil
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"auth_type", &c.AuthType}, {"region_name", &c.Region}, {"interface", &c.Interface},
	} {
		if err := str(entry, f.name, f.dst); err != nil {
			return Auth{}, err
		}
	}
	if c.Interface == "" {
		if err := str(entry, "endpoint_type", &c.Interface); err != nil {
			return Auth{}, err
		}
	}
	if n := config.ValueNode(entry, "verify"); n != nil {
		var b bool
		if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
			return fail(n.Line, field+".verify", "not a boolean (expected true or false)")
		}
		c.Insecure = !b
	}
	auth := config.ValueNode(entry, "auth")
	if auth == nil {
		return fail(entry.Line, field+".auth", "missing (expected auth_url and credentials)")
	}
	if auth.Kind != yaml.MappingNode {
		return fail(auth.Line, field+".auth", "not a mapping (expected auth_url and credentials)")
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"auth_url", &c.AuthURL}, {"username", &c.Username}, {"user_id", &c.UserID}, {"password", &c.Password},
		{"user_domain_name", &c.UserDomainName}, {"user_domain_id", &c.UserDomainID},
		{"project_name", &c.ProjectName}, {"project_id", &c.ProjectID},
		{"project_domain_name", &c.ProjectDomainName}, {"project_domain_id", &c.ProjectDomainID},
		{"domain_name", &c.DomainName}, {"domain_id", &c.DomainID},
		{"application_credential_id", &c.ApplicationCredentialID},
		{"application_credential_name", &c.ApplicationCredentialName},
		{"application_credential_secret", &c.ApplicationCredentialSecret},
	} {
		if err := str(auth, f.name, f.dst); err != nil {
			return Auth{}, err
		}
	}
	// Validate what toAuth would echo in its messages, without the value.
	if c.AuthURL != "" {
		if err := checkAuthURL(c.AuthURL); err != nil {
			return fail(config.ValueNode(auth, "auth_url").Line, field+".auth.auth_url", "%s", err)
		}
	}
	switch strings.ToLower(c.AuthType) {
	case "", "password", "v3password", "v3applicationcredential", "applicationcredential":
	default:
		return fail(config.ValueNode(entry, "auth_type").Line, field+".auth_type", "not supported (expected password or v3applicationcredential)")
	}
	if _, ferr := availability(c.Interface); ferr != nil {
		return fail(entry.Line, field+".interface", "not an endpoint interface (expected public, internal or admin)")
	}
	a, ferr := c.toAuth(source)
	if ferr != nil {
		// toAuth's messages for these inputs say what is missing, never a value.
		line, at := entry.Line, field+".auth."+ferr.field
		if ferr.field == "cacert" {
			at = field + ".cacert"
			if n := config.KeyNode(entry, "cacert"); n != nil && caPEM == "" {
				line = n.Line
			}
			if caPEM != "" {
				at = "the Secret's CA bundle key"
			}
		} else if n := config.KeyNode(auth, ferr.field); n != nil {
			line = n.Line
		}
		return fail(line, at, "%s", ferr.msg)
	}
	a.Source = fmt.Sprintf("%s (cloud %s)", source, cloud)
	return a, nil
}

// checkAuthURL accepts an absolute http(s) URL with a host and no user information. Its error never
// holds the URL.
func checkAuthURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("not a URL (expected e.g. https://keystone.example.com:5000/v3)")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("not an http(s) URL (expected e.g. https://keystone.example.com:5000/v3)")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host (expected e.g. https://keystone.example.com:5000/v3)")
	case u.User != nil:
		return errors.New("holds user information (expected no user:password@ in the URL)")
	}
	return nil
}

func fieldOf(cloudField string, parent, entry *yaml.Node, name string) string {
	if parent == entry {
		return cloudField + "." + name
	}
	return cloudField + ".auth." + name
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrorLine is the line number a YAML error names (0: none). Only the number is taken from the
// error: its text may quote the input.
func yamlErrorLine(err error) int {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

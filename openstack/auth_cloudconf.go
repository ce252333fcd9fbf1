package openstack

// The cloud controller manager's and Cinder CSI's cloud.conf, as a workload cluster's Secret holds it (key
// cloud.conf of kube-system/cloud-config, kube-system/cinder-csi-cloud-config): a gcfg INI file whose [Global]
// section holds the credentials (cloud-provider-openstack's docs, "Config OpenStack Cloud Controller Manager").
// Like a clouds.yaml from a Secret it is input from whoever can write that Secret: only the credentials are
// taken (never a file it names: ca-file, clouds-file), and errors name the source, the line and the option,
// never a value.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vitalsproject/vitals/config"
)

// MaxCloudConfSize bounds a cloud.conf or clouds.yaml read from a workload cluster's Secret (such files are a
// few hundred bytes; the API server allows a Secret 1 MiB).
const MaxCloudConfSize = 64 << 10

// ErrTooLarge is wrapped by the errors for a Secret's value larger than MaxCloudConfSize.
var ErrTooLarge = errors.New("too large")

// CloudConf is what a cloud.conf's [Global] section says of the credentials.
type CloudConf struct {
	// Auth is the credentials of [Global] (zero when UseClouds).
	Auth Auth
	// UseClouds: [Global] use-clouds = true, the credentials are a clouds.yaml's (clouds-file, which the
	// Secret may hold beside cloud.conf), entry Cloud.
	UseClouds bool
	// Cloud is the clouds.yaml entry of use-clouds (default "openstack", cloud-provider-openstack's).
	Cloud string
}

// cloudConfKeys are the [Global] options read, cloud-provider-openstack's names (tenant-* is the older
// spelling of project-*; the INI reader treats - and _ alike).
var cloudConfKeys = []struct {
	names []string
	dst   func(*Credentials) *string
}{
	{[]string{"auth-url"}, func(c *Credentials) *string { return &c.AuthURL }},
	{[]string{"username", "user-name"}, func(c *Credentials) *string { return &c.Username }},
	{[]string{"user-id"}, func(c *Credentials) *string { return &c.UserID }},
	{[]string{"password"}, func(c *Credentials) *string { return &c.Password }},
	{[]string{"tenant-id", "project-id"}, func(c *Credentials) *string { return &c.ProjectID }},
	{[]string{"tenant-name", "project-name"}, func(c *Credentials) *string { return &c.ProjectName }},
	{[]string{"tenant-domain-id", "project-domain-id"}, func(c *Credentials) *string { return &c.ProjectDomainID }},
	{[]string{"tenant-domain-name", "project-domain-name"}, func(c *Credentials) *string { return &c.ProjectDomainName }},
	{[]string{"domain-id"}, func(c *Credentials) *string { return &c.DomainID }},
	{[]string{"domain-name"}, func(c *Credentials) *string { return &c.DomainName }},
	{[]string{"user-domain-id"}, func(c *Credentials) *string { return &c.UserDomainID }},
	{[]string{"user-domain-name"}, func(c *Credentials) *string { return &c.UserDomainName }},
	{[]string{"region"}, func(c *Credentials) *string { return &c.Region }},
	{[]string{"application-credential-id"}, func(c *Credentials) *string { return &c.ApplicationCredentialID }},
	{[]string{"application-credential-name"}, func(c *Credentials) *string { return &c.ApplicationCredentialName }},
	{[]string{"application-credential-secret"}, func(c *Credentials) *string { return &c.ApplicationCredentialSecret }},
}

// ParseSecretCloudConf reads the credentials of a cloud.conf held in memory (a workload Secret's value): the
// [Global] section's auth-url, application-credential-id/-name/-secret or username/user-id, password, tenant
// (project) and domains, region. use-clouds = true is returned as UseClouds (the caller reads the clouds.yaml).
// A trust (trust-id) is not supported. source names it in errors, e.g. "workload secret kube-system/cloud-config
// key cloud.conf". Errors are *config.Error values that say where and what was expected, never any part of data.
func ParseSecretCloudConf(data []byte, source string) (CloudConf, error) {
	fail := func(line int, field, format string, args ...any) (CloudConf, error) {
		return CloudConf{}, &config.Error{File: source, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxCloudConfSize {
		return CloudConf{}, &config.Error{File: source, Msg: fmt.Sprintf("%v: %d bytes (expected at most %d)", ErrTooLarge, len(data), MaxCloudConfSize), Err: ErrTooLarge}
	}
	if strings.TrimSpace(string(data)) == "" {
		return fail(0, "", "empty (expected a cloud.conf: a [Global] section with auth-url and credentials)")
	}
	f, err := config.ParseINI(source, data)
	if err != nil {
		// The INI reader's errors say where and "a value of N bytes (not shown)", never the line's text.
		return CloudConf{}, err
	}
	var sec *config.Section
	for _, name := range []string{"Global", "global", "GLOBAL"} {
		if f.HasSection(name) {
			sec = f.Section(name)
			break
		}
	}
	if sec == nil {
		return fail(0, "", "no [Global] section (expected a cloud.conf: a [Global] section with auth-url and credentials)")
	}
	field := func(key string) string { return sec.Name() + "." + key }
	line := func(key string) int {
		if l := sec.Line(key); l > 0 {
			return l
		}
		return sec.HeaderLine()
	}
	if sec.Has("trust-id") {
		return fail(line("trust-id"), field("trust-id"), "a trust is not supported (expected an application credential or a password)")
	}
	if v := strings.TrimSpace(sec.String("use-clouds", "")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fail(line("use-clouds"), field("use-clouds"), "not a boolean (expected true or false)")
		}
		if b {
			cloud := strings.TrimSpace(sec.String("cloud", ""))
			if cloud == "" {
				cloud = DefaultCloudsYAMLCloud
			}
			return CloudConf{UseClouds: true, Cloud: cloud}, nil
		}
	}
	var c Credentials
	keyOf := map[string]string{} // keystoneauth option -> the cloud.conf key that set it, for errors
	for _, k := range cloudConfKeys {
		for _, name := range k.names {
			if sec.Has(name) {
				*k.dst(&c) = strings.TrimSpace(sec.String(name, ""))
				keyOf[strings.ReplaceAll(k.names[0], "-", "_")] = name
				break
			}
		}
	}
	if c.AuthURL == "" {
		return fail(sec.HeaderLine(), field("auth-url"), "missing: the Keystone URL, e.g. https://keystone.example.com:5000/v3")
	}
	if err := checkAuthURL(c.AuthURL); err != nil {
		return fail(line("auth-url"), field("auth-url"), "%s", err)
	}
	if c.ApplicationCredentialID != "" || c.ApplicationCredentialName != "" || c.ApplicationCredentialSecret != "" {
		c.AuthType = "v3applicationcredential"
	}
	a, ferr := c.toAuth(source)
	if ferr != nil {
		// toAuth's messages for these inputs say what is missing, never a value (the URL was checked above).
		key := keyOf[ferr.field]
		if key == "" {
			key = strings.ReplaceAll(ferr.field, "_", "-")
		}
		return fail(line(key), field(key), "%s", strings.ReplaceAll(ferr.msg, "_", "-"))
	}
	return CloudConf{Auth: a}, nil
}

// DefaultCloudsYAMLCloud is the clouds.yaml entry cloud-provider-openstack uses when cloud.conf names none.
const DefaultCloudsYAMLCloud = "openstack"

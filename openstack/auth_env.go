package openstack

import (
	"os"
	"strconv"
	"strings"

	"github.com/vitalsproject/vitals/config"
)

// envNames maps keystoneauth option names to their openrc variables, first name first.
var envNames = map[string][]string{
	"auth_type":                     {"OS_AUTH_TYPE"},
	"auth_url":                      {"OS_AUTH_URL"},
	"username":                      {"OS_USERNAME"},
	"user_id":                       {"OS_USER_ID", "OS_USERID"},
	"password":                      {"OS_PASSWORD"},
	"user_domain_name":              {"OS_USER_DOMAIN_NAME"},
	"user_domain_id":                {"OS_USER_DOMAIN_ID"},
	"project_name":                  {"OS_PROJECT_NAME", "OS_TENANT_NAME"},
	"project_id":                    {"OS_PROJECT_ID", "OS_TENANT_ID"},
	"project_domain_name":           {"OS_PROJECT_DOMAIN_NAME"},
	"project_domain_id":             {"OS_PROJECT_DOMAIN_ID"},
	"domain_name":                   {"OS_DOMAIN_NAME"},
	"domain_id":                     {"OS_DOMAIN_ID"},
	"application_credential_id":     {"OS_APPLICATION_CREDENTIAL_ID"},
	"application_credential_name":   {"OS_APPLICATION_CREDENTIAL_NAME"},
	"application_credential_secret": {"OS_APPLICATION_CREDENTIAL_SECRET"},
	"region_name":                   {"OS_REGION_NAME"},
	"interface":                     {"OS_INTERFACE", "OS_ENDPOINT_TYPE"},
	"cafile":                        {"OS_CACERT"},
	"insecure":                      {"OS_INSECURE"},
}

// AuthFromEnv reads the OS_* variables of an openrc file through getenv (nil: os.Getenv).
// OS_USER_DOMAIN_* and OS_PROJECT_DOMAIN_* fall back to OS_DOMAIN_*. A missing or bad variable is a
// *config.Error whose Field names the variable.
func AuthFromEnv(getenv func(string) string) (Auth, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	get := func(opt string) string {
		for _, n := range envNames[opt] {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	c := credentialsFrom(get)
	if v := get("insecure"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Auth{}, &config.Error{Field: "OS_INSECURE", Msg: "expected true or false, got " + strconv.Quote(v)}
		}
		c.Insecure = b
	}
	a, ferr := c.toAuth("environment (OS_* variables)")
	if ferr != nil {
		return a, &config.Error{Field: envNames[ferr.field][0], Msg: strings.TrimPrefix(ferr.msg, "missing: ")}
	}
	return a, nil
}

// credentialsFrom fills Credentials from a lookup by keystoneauth option name.
func credentialsFrom(get func(opt string) string) Credentials {
	c := Credentials{
		AuthType:                    get("auth_type"),
		AuthURL:                     get("auth_url"),
		Username:                    get("username"),
		UserID:                      get("user_id"),
		Password:                    get("password"),
		UserDomainName:              get("user_domain_name"),
		UserDomainID:                get("user_domain_id"),
		ProjectName:                 get("project_name"),
		ProjectID:                   get("project_id"),
		ProjectDomainName:           get("project_domain_name"),
		ProjectDomainID:             get("project_domain_id"),
		DomainName:                  get("domain_name"),
		DomainID:                    get("domain_id"),
		ApplicationCredentialID:     get("application_credential_id"),
		ApplicationCredentialName:   get("application_credential_name"),
		ApplicationCredentialSecret: get("application_credential_secret"),
		Region:                      get("region_name"),
		Interface:                   get("interface"),
		CAFile:                      get("cafile"),
	}
	if c.AuthType == "" && c.ApplicationCredentialSecret != "" && c.Password == "" {
		c.AuthType = "v3applicationcredential"
	}
	return c
}

package testenv

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

// OpenStack tiers (VITALS_TEST_OPENSTACK).
const (
	TierFast = "fast" // Keystone + Neutron
	TierFull = "full" // and Nova (fake driver), Placement, Glance, Cinder (fake driver), Octavia (no-op drivers)
)

// OpenStackEnv describes the admin credentials of the real test cloud, as OS_* variables do.
type OpenStackEnv struct {
	AuthURL           string // OS_AUTH_URL, Keystone v3 (ends in /v3)
	Username          string
	Password          string
	ProjectName       string
	UserDomainName    string
	ProjectDomainName string
	DomainName        string
	RegionName        string
	Tier              string // TierFast or TierFull
}

var osNames = []string{"OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME", "OS_USER_DOMAIN_NAME",
	"OS_PROJECT_DOMAIN_NAME", "OS_DOMAIN_NAME", "OS_REGION_NAME", EnvOpenStackTier}

// OpenStack returns the credentials of the shared test cloud. It skips t (fails it when
// VITALS_TESTENV_REQUIRED=1) when OpenStack is not available.
func OpenStack(t testing.TB) OpenStackEnv {
	t.Helper()
	short(t, "OpenStack test")
	s := load()
	s.checkFile(t)
	v, from := s.group(EnvOpenStackTier, osNames...)
	if v[EnvOpenStackTier] == "" || v["OS_AUTH_URL"] == "" {
		unavailable(t, "OpenStack not available: %s (%s unset)", makeHint, EnvOpenStackTier)
	}
	e := OpenStackEnv{
		AuthURL: v["OS_AUTH_URL"], Username: v["OS_USERNAME"], Password: v["OS_PASSWORD"],
		ProjectName: v["OS_PROJECT_NAME"], UserDomainName: v["OS_USER_DOMAIN_NAME"],
		ProjectDomainName: v["OS_PROJECT_DOMAIN_NAME"], DomainName: v["OS_DOMAIN_NAME"],
		RegionName: v["OS_REGION_NAME"], Tier: v[EnvOpenStackTier],
	}
	if e.Tier != TierFast && e.Tier != TierFull {
		t.Fatalf("%s=%q (from %s): expected %q or %q", EnvOpenStackTier, e.Tier, from, TierFast, TierFull)
	}
	hp, err := hostPort(e.AuthURL)
	if err != nil {
		t.Fatalf("OS_AUTH_URL=%q (from %s): %v", e.AuthURL, from, err)
	}
	if err := reachable(hp); err != nil {
		unavailable(t, "OpenStack not available: Keystone at %s (from %s): %v; %s", e.AuthURL, from, err, makeHint)
	}
	return e
}

// RequireFull returns the test cloud's credentials when the full tier runs (Nova, Cinder, Octavia, ...), and
// skips t (fails it when VITALS_TESTENV_REQUIRED=1) when only the fast tier (Keystone + Neutron) does.
func RequireFull(t testing.TB) OpenStackEnv {
	t.Helper()
	e := OpenStack(t)
	if e.Tier != TierFull {
		unavailable(t, "needs the full OpenStack tier (Nova, Cinder, Octavia), but %s=%s: run make testenv-up (VITALS_OPENSTACK_TIER=full)", EnvOpenStackTier, e.Tier)
	}
	return e
}

// Env returns the credentials as OS_* KEY=value pairs, e.g. for exec.Cmd.Env or t.Setenv.
func (e OpenStackEnv) Env() []string {
	return []string{
		"OS_AUTH_URL=" + e.AuthURL,
		"OS_IDENTITY_API_VERSION=3",
		"OS_USERNAME=" + e.Username,
		"OS_PASSWORD=" + e.Password,
		"OS_PROJECT_NAME=" + e.ProjectName,
		"OS_USER_DOMAIN_NAME=" + e.UserDomainName,
		"OS_PROJECT_DOMAIN_NAME=" + e.ProjectDomainName,
		"OS_DOMAIN_NAME=" + e.DomainName,
		"OS_REGION_NAME=" + e.RegionName,
	}
}

// AuthOptions returns gophercloud options for password authentication scoped to the project, with
// re-authentication allowed.
func (e OpenStackEnv) AuthOptions() gophercloud.AuthOptions {
	return gophercloud.AuthOptions{
		IdentityEndpoint: e.AuthURL,
		Username:         e.Username,
		Password:         e.Password,
		DomainName:       e.UserDomainName,
		Scope:            &gophercloud.AuthScope{ProjectName: e.ProjectName, DomainName: e.ProjectDomainName},
		AllowReauth:      true,
	}
}

// EndpointOpts returns gophercloud endpoint options selecting the test cloud's region.
func (e OpenStackEnv) EndpointOpts() gophercloud.EndpointOpts {
	return gophercloud.EndpointOpts{Region: e.RegionName}
}

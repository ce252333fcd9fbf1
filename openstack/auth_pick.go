package openstack

import (
	"errors"
	"os"

	"github.com/vitalsproject/vitals/config"
)

// ErrNoCredentials is PickAuth's answer when no source of credentials is given.
var ErrNoCredentials = errors.New("no OpenStack credentials: no auth section with auth_url in the configuration file, no clouds.yaml cloud (--cloud or OS_CLOUD), and no OS_AUTH_URL")

// AuthSources are the places PickAuth may take credentials from.
type AuthSources struct {
	// INI is an oslo-style configuration file already read (nil: none).
	INI *config.INI
	// INISections are the auth sections of INI to look at (default DefaultINISections).
	INISections []string
	// Cloud names an entry of clouds.yaml (a --cloud flag); "" takes OS_CLOUD.
	Cloud string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// PickAuth is the one place that chooses where a command's OpenStack credentials come from. In order:
//
//  1. the first auth section of the INI file (as AuthFromINI) when it sets auth_url, itself or
//     through [DEFAULT];
//  2. the clouds.yaml cloud named by Cloud, else by OS_CLOUD (as AuthFromCloudsYAML);
//  3. the OS_* variables when OS_AUTH_URL is set (as AuthFromEnv).
//
// The first source given is used, and its errors are returned: a source that is given but broken never
// falls through to the next one. With none given, the error is ErrNoCredentials.
func PickAuth(s AuthSources) (Auth, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if s.INI != nil {
		if _, hasURL, _ := authSection(s.INI, s.INISections); hasURL {
			return authFromINI(s.INI, s.INISections)
		}
	}
	cloud := s.Cloud
	if cloud == "" {
		cloud = getenv("OS_CLOUD")
	}
	if cloud != "" {
		return AuthFromCloudsYAML(CloudsYAMLOptions{Cloud: cloud, Getenv: getenv})
	}
	if getenv("OS_AUTH_URL") != "" {
		return AuthFromEnv(getenv)
	}
	return Auth{}, ErrNoCredentials
}

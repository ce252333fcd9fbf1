package openstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"go.yaml.in/yaml/v3"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// CloudsYAMLOptions select a cloud in a clouds.yaml file.
type CloudsYAMLOptions struct {
	// Cloud is the entry's name; "" takes OS_CLOUD.
	Cloud string
	// Paths are the clouds.yaml files to try, first found wins; empty: OS_CLIENT_CONFIG_FILE if
	// set, else ./clouds.yaml, ${XDG_CONFIG_HOME:-~/.config}/openstack/clouds.yaml and
	// /etc/openstack/clouds.yaml (python-openstackclient's order). secure.yaml is read from the same
	// directory as the clouds.yaml found.
	Paths []string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// AuthFromCloudsYAML reads one cloud of a clouds.yaml (merged with its secure.yaml) with
// gophercloud's clouds parser. An unknown cloud name is an error that lists the known ones.
func AuthFromCloudsYAML(o CloudsYAMLOptions) (Auth, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	name := o.Cloud
	if name == "" {
		name = getenv("OS_CLOUD")
	}
	if name == "" {
		return Auth{}, &config.Error{Field: "OS_CLOUD", Msg: "no cloud name given: set OS_CLOUD or --os-cloud"}
	}
	path, data, cloudsByName, err := readCloudsYAML(o.Paths, getenv)
	if err != nil {
		return Auth{}, err
	}
	if _, ok := cloudsByName[name]; !ok {
		return Auth{}, fmt.Errorf("cloud %q not found in %s; known: %s", name, path, strings.Join(cloudNames(cloudsByName), ", "))
	}
	opts, err := cloudsTLSOptions(getenv)
	if err != nil {
		return Auth{}, err
	}
	// gophercloud is given the bytes read here, and secure.yaml read the same way; the certificate
	// files it reads itself are checked first (regular, bounded in size).
	opts = append(opts, clouds.WithCloudName(name), clouds.WithCloudsYAML(bytes.NewReader(data)))
	securePath := filepath.Join(filepath.Dir(path), "secure.yaml")
	if secure, err := bounded.ReadFile(context.Background(), securePath, bounded.ConfigSize); err == nil {
		opts = append(opts, clouds.WithSecureYAML(bytes.NewReader(secure)))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Auth{}, &config.Error{File: securePath, Msg: fmt.Sprintf("read secure.yaml: %v", err), Err: err}
	}
	if err := checkTLSFiles(cloudsByName[name], getenv); err != nil {
		return Auth{}, &config.Error{File: path, Field: "clouds." + name, Msg: err.Error(), Err: err}
	}
	ao, eo, tlsConfig, err := clouds.Parse(opts...)
	if err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// The decoder's message may quote the file: say where, not what.
			return Auth{}, &config.Error{File: path, Line: yamlErrorLine(err), Field: "clouds." + name, Msg: "a value of the wrong type (expected strings under auth, a boolean verify)"}
		}
		return Auth{}, &config.Error{File: path, Field: "clouds." + name, Msg: err.Error()}
	}
	if ao.IdentityEndpoint == "" {
		return Auth{}, &config.Error{File: path, Line: cloudsByName[name].Line, Field: "clouds." + name + ".auth.auth_url", Msg: "missing: the Keystone URL"}
	}
	if tlsConfig != nil && tlsConfig.RootCAs == nil && !tlsConfig.InsecureSkipVerify && len(tlsConfig.Certificates) == 0 {
		tlsConfig = nil
	}
	return Auth{
		Options:      ao,
		Region:       eo.Region,
		Availability: eo.Availability,
		TLS:          tlsConfig,
		Source:       fmt.Sprintf("clouds.yaml %s (cloud %s)", path, name),
	}, nil
}

// CloudNames lists the clouds of the clouds.yaml that AuthFromCloudsYAML would read (o.Cloud is not
// used), sorted: for the shell completion of --cloud.
func CloudNames(o CloudsYAMLOptions) ([]string, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	_, _, cs, err := readCloudsYAML(o.Paths, getenv)
	if err != nil {
		return nil, err
	}
	return cloudNames(cs), nil
}

// readCloudsYAML reads the first clouds.yaml of paths (empty: the default ones) that exists (a regular
// file of at most bounded.ConfigSize), and returns its path, its contents and its clouds by name.
func readCloudsYAML(paths []string, getenv func(string) string) (string, []byte, map[string]yaml.Node, error) {
	if len(paths) == 0 {
		paths = defaultCloudsPaths(getenv)
	}
	path := ""
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			path = p
			break
		}
	}
	if path == "" {
		return "", nil, nil, &config.Error{Msg: fmt.Sprintf("no clouds.yaml found (looked at %s)", strings.Join(paths, ", "))}
	}
	data, err := bounded.ReadFile(context.Background(), path, bounded.ConfigSize)
	if err != nil {
		return "", nil, nil, &config.Error{File: path, Msg: fmt.Sprintf("read clouds.yaml: %v", err), Err: err}
	}
	var doc struct {
		Clouds map[string]yaml.Node `yaml:"clouds"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The parser's message may quote the file: say where, not what.
		return "", nil, nil, &config.Error{File: path, Line: yamlErrorLine(err), Msg: "not a clouds.yaml (expected a YAML mapping with a clouds section)"}
	}
	return path, data, doc.Clouds, nil
}

func cloudNames(cs map[string]yaml.Node) []string {
	names := make([]string, 0, len(cs))
	for k := range cs {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// cloudsTLSOptions are the TLS settings of the environment, which win over the cloud's cacert and verify
// (as in OpenStack's command-line clients): OS_CACERT, a CA bundle file, and OS_INSECURE.
func cloudsTLSOptions(getenv func(string) string) ([]clouds.ParseOption, error) {
	var opts []clouds.ParseOption
	if v := getenv("OS_CACERT"); v != "" {
		opts = append(opts, clouds.WithCACertPath(v))
	}
	if v := getenv("OS_INSECURE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &config.Error{Field: "OS_INSECURE", Msg: "expected true or false, got " + strconv.Quote(v)}
		}
		opts = append(opts, clouds.WithInsecure(b))
	}
	return opts, nil
}

// checkTLSFiles checks the certificate files gophercloud will read for a cloud (OS_CACERT, OS_CERT and
// OS_KEY, else the entry's cacert, cert and key): each a regular file of at most bounded.CertSize. A
// missing one is left to gophercloud's own error.
func checkTLSFiles(entry yaml.Node, getenv func(string) string) error {
	for _, f := range []struct{ env, key string }{{"OS_CACERT", "cacert"}, {"OS_CERT", "cert"}, {"OS_KEY", "key"}} {
		p := getenv(f.env)
		if p == "" {
			if n := config.ValueNode(&entry, f.key); n != nil && n.Kind == yaml.ScalarNode {
				p = n.Value
			}
		}
		if p == "" || strings.HasPrefix(p, "~") {
			continue
		}
		if err := bounded.Check(p, bounded.CertSize); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	return nil
}

func defaultCloudsPaths(getenv func(string) string) []string {
	if p := getenv("OS_CLIENT_CONFIG_FILE"); p != "" {
		return []string{p}
	}
	var paths []string
	if wd, err := os.Getwd(); err == nil {
		paths = append(paths, filepath.Join(wd, "clouds.yaml"))
	}
	cfg := getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		if home := getenv("HOME"); home != "" {
			cfg = filepath.Join(home, ".config")
		}
	}
	if cfg != "" {
		paths = append(paths, filepath.Join(cfg, "openstack", "clouds.yaml"))
	}
	return append(paths, "/etc/openstack/clouds.yaml")
}

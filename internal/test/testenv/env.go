package testenv

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// Names of the environment variables that describe the test services.
const (
	EnvKubeconfig      = "VITALS_TEST_KUBECONFIG"
	EnvAssets          = "KUBEBUILDER_ASSETS"
	EnvOpenStackTier   = "VITALS_TEST_OPENSTACK"
	EnvDockerHost      = "VITALS_TEST_DOCKER_HOST"
	EnvRequired        = prereq.EnvRequired
	EnvTestenvDir      = "VITALS_TESTENV_DIR"
	envFileRelative    = ".testenv/env"
	makeHint           = "run make testenv-up"
	reachabilityTimout = 2 * time.Second
)

// source is the merged view of the environment and the env file.
type source struct {
	file    map[string]string // variables of the env file; nil when there is none
	path    string            // the env file's path, "" when none was found
	dir     string            // the testenv state directory (the env file's directory)
	fileErr error             // a broken env file
}

var (
	loadOnce sync.Once
	loaded   source
)

func load() source {
	loadOnce.Do(func() { loaded = loadSource(os.Getenv, os.Getwd) })
	return loaded
}

// loadSource finds and parses the env file: $VITALS_TESTENV_DIR/env, else .testenv/env in the working directory
// or one of its parents (stopping at the module root, the first directory with a go.mod).
func loadSource(getenv func(string) string, getwd func() (string, error)) source {
	var s source
	if d := getenv(EnvTestenvDir); d != "" {
		s.dir = d
		s.path = filepath.Join(d, "env")
	} else if wd, err := getwd(); err == nil {
		s.path, s.dir = findEnvFile(wd)
	}
	if s.path == "" {
		return s
	}
	vars, err := parseEnvFile(s.path)
	if os.IsNotExist(err) {
		s.path = ""
		return s
	}
	s.file, s.fileErr = vars, err
	return s
}

func findEnvFile(dir string) (path, stateDir string) {
	for {
		p := filepath.Join(dir, filepath.FromSlash(envFileRelative))
		if _, err := os.Stat(p); err == nil {
			return p, filepath.Dir(p)
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			// the module root: keep its .testenv as the state directory even without an env file
			return "", filepath.Join(dir, ".testenv")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ""
		}
		dir = parent
	}
}

// parseEnvFile reads lines of the form `export NAME=value` or `NAME=value` (values optionally quoted);
// blank lines and # comments are ignored.
func parseEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		l = strings.TrimPrefix(l, "export ")
		name, value, ok := strings.Cut(l, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s:%d: expected NAME=value, got %q", path, line, sc.Text())
		}
		if v, err := strconv.Unquote(value); err == nil {
			value = v
		} else if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
			value = value[1 : len(value)-1]
		}
		vars[strings.TrimSpace(name)] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return vars, nil
}

// group returns the values of names: from the environment when marker is set there, else from the env file.
// from says where they came from, for messages.
func (s source) group(marker string, names ...string) (vals map[string]string, from string) {
	vals = map[string]string{}
	if os.Getenv(marker) != "" {
		for _, n := range names {
			vals[n] = os.Getenv(n)
		}
		return vals, "environment"
	}
	if s.file == nil {
		return vals, ""
	}
	for _, n := range names {
		vals[n] = s.file[n]
	}
	return vals, s.path
}

// unavailable skips t (or fails it when services are required) with a message saying what is missing.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	prereq.Missing(t, format, args...)
}

// short skips t in -short runs, which are for tests that need no service.
func short(t testing.TB, what string) {
	t.Helper()
	prereq.Short(t, what)
}

// checkFile fails or skips t when the env file exists but cannot be parsed.
func (s source) checkFile(t testing.TB) {
	t.Helper()
	if s.fileErr != nil {
		unavailable(t, "test services: broken env file: %v; %s", s.fileErr, makeHint)
	}
}

var (
	reachMu sync.Mutex
	reached = map[string]error{}
)

// reachable dials hostport once per process and remembers the answer, so that a stale env file (services
// stopped since) gives one clear message instead of a timeout in every test.
func reachable(hostport string) error {
	reachMu.Lock()
	defer reachMu.Unlock()
	if err, ok := reached[hostport]; ok {
		return err
	}
	c, err := net.DialTimeout("tcp", hostport, reachabilityTimout)
	if err == nil {
		c.Close()
	}
	reached[hostport] = err
	return err
}

// hostPort returns host:port of an http(s) or unix URL's endpoint ("" for unix sockets).
func hostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme == "unix" {
		return "", nil
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443"), nil
	}
	return net.JoinHostPort(u.Hostname(), "80"), nil
}

// StateDir returns the directory of the test services' state (configurations, logs), where the env file lives:
// $VITALS_TESTENV_DIR, else .testenv at the repository root. Empty when unknown.
func StateDir() string { return load().dir }

// Unavailable skips t (fails it when VITALS_TESTENV_REQUIRED=1) because a tool or service it needs is
// missing; the message says what and how to get it.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	unavailable(t, format, args...)
}

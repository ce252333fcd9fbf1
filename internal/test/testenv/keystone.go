package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack"
)

// Keystone is a private Keystone process for one test: the same configuration, database and fernet keys as the
// shared test Keystone, on its own port. Tokens of either instance are valid on both. A test may stop and start
// it to see how its code behaves when Keystone goes away, without disturbing tests that use the shared one.
type Keystone struct {
	url  string
	env  OpenStackEnv
	proc *process
}

// PrivateKeystone starts a private Keystone (see Keystone) and stops it when t ends. It skips t (fails it when
// VITALS_TESTENV_REQUIRED=1) when the test OpenStack is not available.
func PrivateKeystone(t testing.TB) *Keystone {
	t.Helper()
	shared := OpenStack(t)
	conf := filepath.Join(StateDir(), "openstack", "etc", "keystone", "keystone.conf")
	if _, err := os.Stat(conf); err != nil {
		unavailable(t, "private Keystone: no Keystone configuration at %s (%v); %s", conf, err, makeHint)
	}
	uwsgi, err := exec.LookPath("uwsgi")
	if err != nil {
		unavailable(t, "private Keystone: uwsgi not installed (%v); run hack/install-deps.sh", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	k := &Keystone{
		url: fmt.Sprintf("http://127.0.0.1:%d/v3", port),
		proc: &process{
			name:    "keystone (private)",
			path:    uwsgi,
			args:    keystoneUWSGIArgs(port, conf),
			logPath: filepath.Join(t.TempDir(), "keystone-uwsgi.log"),
		},
	}
	k.env = shared
	k.env.AuthURL = k.url
	t.Cleanup(func() {
		if err := k.Stop(); err != nil {
			t.Errorf("stop private keystone: %v", err)
		}
	})
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	return k
}

// keystoneUWSGIArgs runs Keystone in one worker process of one thread: a private Keystone serves one test.
// Keystone's libraries import eventlet and greenlet (oslo.concurrency does, even unpatched). Under uWSGI worker
// threads a greenlet made on one thread gets switched to from another ("greenlet.error: cannot switch to a
// different thread"), which hangs the worker, and the teardown of greenlet thread states at exit crashes it: a
// restart then sometimes never became ready. One thread, no interpreter teardown at exit and short reload
// mercies make stop and start deterministic; --need-app makes a worker that cannot load Keystone exit (a clear
// failure in the log) instead of answering 500s.
func keystoneUWSGIArgs(port int, conf string) []string {
	return []string{
		"--plugins", "python3",
		"--http-socket", "127.0.0.1:" + strconv.Itoa(port),
		"--wsgi-file", "/usr/bin/keystone-wsgi-public",
		"--env", "OS_KEYSTONE_CONFIG_FILES=" + conf,
		"--master", "--processes", "1", "--threads", "1", "--single-interpreter", "--lazy-apps", "--need-app",
		"--die-on-term", "--skip-atexit-teardown", "--worker-reload-mercy", "5", "--reload-mercy", "5",
		"--buffer-size", "65535",
		// clients reuse connections; uwsgi's http-socket does not do keep-alive
		"--add-header", "Connection: close",
	}
}

// URL returns the private Keystone's identity endpoint (http://127.0.0.1:PORT/v3).
func (k *Keystone) URL() string { return k.url }

// OpenStack returns the shared cloud's credentials with AuthURL pointing at this Keystone. The catalog it
// serves is the shared one: other services are reached at their usual endpoints.
func (k *Keystone) OpenStack() OpenStackEnv { return k.env }

// Start starts the Keystone process (again) on the same port and waits until it issues a token: the version
// document answers as soon as the worker has loaded Keystone, the token proves its database and keys.
func (k *Keystone) Start() error {
	if err := k.proc.start(); err != nil {
		return err
	}
	if err := k.proc.waitReady(90*time.Second, func(ctx context.Context) error { return httpOK(ctx, probeClient, k.url, "") }); err != nil {
		return err
	}
	// One request with a generous timeout, not a poll: the only worker would go on serving every abandoned
	// probe of a loaded machine, one after the other.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := k.issuesToken(ctx); err != nil {
		return fmt.Errorf("%s answers but %w; log %s:\n%s", k.proc.name, err, k.proc.logPath, k.proc.logTail(20))
	}
	return nil
}

// issuesToken authenticates at the private Keystone with the shared cloud's admin credentials.
func (k *Keystone) issuesToken(ctx context.Context) error {
	pc, err := openstack.NewClient(k.url)
	if err != nil {
		return fmt.Errorf("keystone client for %s: %w", k.url, err)
	}
	pc.HTTPClient = *probeClient
	opts := k.env.AuthOptions()
	opts.AllowReauth = false
	if err := openstack.Authenticate(ctx, pc, opts); err != nil {
		return fmt.Errorf("issue a token at %s: %w", k.url, err)
	}
	return nil
}

// Stop stops the Keystone process; connections are refused until Start.
func (k *Keystone) Stop() error { return k.proc.stop(10 * time.Second) }

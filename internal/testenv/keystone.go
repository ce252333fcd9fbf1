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
			name: "keystone (private)",
			path: uwsgi,
			args: []string{
				"--plugins", "python3",
				"--http-socket", "127.0.0.1:" + strconv.Itoa(port),
				"--wsgi-file", "/usr/bin/keystone-wsgi-public",
				"--env", "OS_KEYSTONE_CONFIG_FILES=" + conf,
				"--master", "--processes", "1", "--threads", "2", "--enable-threads", "--lazy-apps",
				"--die-on-term", "--buffer-size", "65535",
				// clients reuse connections; uwsgi's http-socket does not do keep-alive
				"--add-header", "Connection: close",
			},
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

// URL returns the private Keystone's identity endpoint (http://127.0.0.1:PORT/v3).
func (k *Keystone) URL() string { return k.url }

// OpenStack returns the shared cloud's credentials with AuthURL pointing at this Keystone. The catalog it
// serves is the shared one: other services are reached at their usual endpoints.
func (k *Keystone) OpenStack() OpenStackEnv { return k.env }

// Start starts the Keystone process (again) on the same port and waits until it answers.
func (k *Keystone) Start() error {
	if err := k.proc.start(); err != nil {
		return err
	}
	return k.proc.waitReady(90*time.Second, func(ctx context.Context) error { return httpOK(ctx, probeClient, k.url, "") })
}

// Stop stops the Keystone process; connections are refused until Start.
func (k *Keystone) Stop() error { return k.proc.stop(10 * time.Second) }

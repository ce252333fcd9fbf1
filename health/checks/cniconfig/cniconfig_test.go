package cniconfig

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

const flannel = `{
  "name": "cbr0",
  "cniVersion": "0.3.1",
  "plugins": [
    {"type": "flannel", "delegate": {"hairpinMode": true, "isDefaultGateway": true}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}`

const kuryr = `{"cniVersion": "0.3.1", "name": "kuryr", "type": "kuryr-cni", "kuryr_conf": "kuryr.conf", "debug": false}`

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    Network
		wantErr string
	}{
		{
			name:  "conflist",
			files: map[string]string{"10-flannel.conflist": flannel},
			want:  Network{File: "10-flannel.conflist", Name: "cbr0", CNIVersion: "0.3.1", Plugins: []string{"flannel", "portmap"}},
		},
		{
			name:  "single plugin conf",
			files: map[string]string{"10-kuryr.conf": kuryr},
			want:  Network{File: "10-kuryr.conf", Name: "kuryr", CNIVersion: "0.3.1", Plugins: []string{"kuryr-cni"}},
		},
		{
			name:  "json extension holding a list",
			files: map[string]string{"50-x.json": flannel},
			want:  Network{File: "50-x.json", Name: "cbr0", CNIVersion: "0.3.1", Plugins: []string{"flannel", "portmap"}},
		},
		{
			name:  "first file in lexical order wins, others ignored",
			files: map[string]string{"05-kuryr.conf": kuryr, "10-broken.conflist": "{", "README": "not json", "99.conf.bak": "{"},
			want:  Network{File: "05-kuryr.conf", Name: "kuryr", CNIVersion: "0.3.1", Plugins: []string{"kuryr-cni"}},
		},
		{
			name:    "first file broken",
			files:   map[string]string{"00-broken.conflist": "{\n  \"name\": \"x\",\n  \"cniVersion\" \"0.4.0\"\n}", "10-kuryr.conf": kuryr},
			wantErr: "00-broken.conflist:3:16: invalid JSON",
		},
		{
			name:    "wrong type",
			files:   map[string]string{"10.conf": `{"cniVersion": 1, "name": "x", "type": "bridge"}`},
			wantErr: "invalid JSON: field cniVersion: expected string, got number",
		},
		{
			name:    "empty directory",
			files:   map[string]string{},
			wantErr: "no CNI network configuration",
		},
		{
			name:    "only unrelated files",
			files:   map[string]string{"README": "hello", "10.conf.disabled": kuryr},
			wantErr: "no CNI network configuration",
		},
		{
			name:    "conflist without plugins",
			files:   map[string]string{"10.conflist": `{"cniVersion": "1.0.0", "name": "x"}`},
			wantErr: "missing plugins (a non-empty list)",
		},
		{
			name:    "conflist with an untyped plugin",
			files:   map[string]string{"10.conflist": `{"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "bridge"}, {"mtu": 1400}]}`},
			wantErr: "missing plugins[1].type",
		},
		{
			name:    "conf missing everything",
			files:   map[string]string{"10.conf": `{}`},
			wantErr: "missing cniVersion, name, type",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Load(context.Background(), dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				check, cerr := Check(Options{Dir: dir})
				if cerr != nil {
					t.Fatal(cerr)
				}
				if cerr := check(context.Background()); cerr == nil {
					t.Fatal("Check passed where Load failed")
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.want.File = filepath.Join(dir, tt.want.File)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadMissingDirectory(t *testing.T) {
	_, err := Load(context.Background(), filepath.Join(t.TempDir(), "absent"))
	if err == nil || !strings.Contains(err.Error(), "read CNI configuration directory") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckRefusesARelativeDir(t *testing.T) {
	if _, err := Check(Options{Dir: "etc/cni/net.d"}); err == nil || !strings.Contains(err.Error(), `"etc/cni/net.d"`) {
		t.Errorf("Check with a relative Dir: %v, want a refusal naming it", err)
	}
}

// TestLoadNamedPipe: a named pipe (or /dev/zero behind a link) where the runtime's first configuration
// file is looked for fails the check at once with the reason, instead of hanging it (or filling it).
func TestLoadNamedPipe(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		says string
	}{
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "not a regular file (a named pipe"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (a character device"},
	} {
		// stop at the first failure: a reader without the bound would fill the memory from /dev/zero
		if !t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.make(filepath.Join(dir, "10-pods.conflist")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := Load(ctx, dir); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("Load = %v; want %q", err, tc.says)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("Load still reading after two minutes")
			}
		}) {
			return
		}
	}
}

package testenv

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    map[string]string
		wantErr bool
	}{
		{name: "exports", content: "# comment\nexport A=1\n\nexport B=two words\n", want: map[string]string{"A": "1", "B": "two words"}},
		{name: "plain and quoted", content: "A=\"x y\"\nB='z'\nC=\n", want: map[string]string{"A": "x y", "B": "z", "C": ""}},
		{name: "url with equals", content: "export U=unix:///a?b=c\n", want: map[string]string{"U": "unix:///a?b=c"}},
		{name: "garbage", content: "export\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "env")
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := parseEnvFile(p)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoadSourceWalksUpToTheModuleRoot(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644))
	noenv := func(string) string { return "" }
	wd := func() (string, error) { return deep, nil }

	s := loadSource(noenv, wd)
	if s.path != "" || s.file != nil {
		t.Fatalf("without an env file: got path %q, vars %v", s.path, s.file)
	}
	if want := filepath.Join(root, ".testenv"); s.dir != want {
		t.Fatalf("state dir = %q, want %q", s.dir, want)
	}

	must(t, os.MkdirAll(filepath.Join(root, ".testenv"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, ".testenv", "env"), []byte("export VITALS_TEST_OPENSTACK=fast\n"), 0o644))
	s = loadSource(noenv, wd)
	if s.path != filepath.Join(root, ".testenv", "env") || s.file[EnvOpenStackTier] != "fast" {
		t.Fatalf("with an env file: got path %q, vars %v", s.path, s.file)
	}

	other := t.TempDir()
	must(t, os.WriteFile(filepath.Join(other, "env"), []byte("export VITALS_TEST_OPENSTACK=full\n"), 0o644))
	s = loadSource(func(k string) string {
		if k == EnvTestenvDir {
			return other
		}
		return ""
	}, wd)
	if s.dir != other || s.file[EnvOpenStackTier] != "full" {
		t.Fatalf("with %s: got dir %q, vars %v", EnvTestenvDir, s.dir, s.file)
	}
}

func TestGroupPrefersTheEnvironmentOnlyWithItsMarker(t *testing.T) {
	s := source{file: map[string]string{"OS_AUTH_URL": "http://file", EnvOpenStackTier: "fast"}, path: "/x/env"}
	t.Setenv("OS_AUTH_URL", "http://shell-cloud")
	t.Setenv(EnvOpenStackTier, "")
	v, from := s.group(EnvOpenStackTier, "OS_AUTH_URL", EnvOpenStackTier)
	if v["OS_AUTH_URL"] != "http://file" || from != "/x/env" {
		t.Fatalf("without marker: got %v from %s; the shell's OS_AUTH_URL must not be used", v, from)
	}
	t.Setenv(EnvOpenStackTier, "full")
	v, from = s.group(EnvOpenStackTier, "OS_AUTH_URL", EnvOpenStackTier)
	if v["OS_AUTH_URL"] != "http://shell-cloud" || v[EnvOpenStackTier] != "full" || from != "environment" {
		t.Fatalf("with marker: got %v from %s", v, from)
	}
}

// recorder captures Skip and Fatal instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, args[0].(string)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	runtime.Goexit()
}

func TestUnavailableSkipsOrFails(t *testing.T) {
	for _, req := range []string{"", "1"} {
		t.Setenv(EnvRequired, req)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); unavailable(r, "kube-apiserver not available") }()
		<-done
		if req == "1" && (!r.failed || r.skipped) {
			t.Errorf("%s=1: want a failure, got skipped=%v failed=%v", EnvRequired, r.skipped, r.failed)
		}
		if req == "" && (!r.skipped || r.failed || r.msg != "kube-apiserver not available") {
			t.Errorf("%s unset: want a skip, got skipped=%v failed=%v msg=%q", EnvRequired, r.skipped, r.failed, r.msg)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

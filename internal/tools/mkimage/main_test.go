package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

func TestLayoutPerPlatform(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range []string{"amd64", "arm64"} {
		if err := os.MkdirAll(filepath.Join(dir, "linux_"+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "linux_"+arch, "app"), []byte(arch), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "layout")
	err := run([]string{"-o", out, "-format", "layout", "-name", "example.org/app:v1", "-platform", "linux/amd64,linux/arm64",
		"-file", "/app=" + filepath.Join(dir, "{os}_{arch}", "app") + ":0755", "-entrypoint", `["/app","serve"]`, "-link", "/bin/app=/app", "-user", "65532:65532",
		"-env", "A=1", "-label", "org.opencontainers.image.version=v1", "-expose", "8090"},
		func(k string) string {
			if k == "SOURCE_DATE_EPOCH" {
				return "1700000000"
			}
			return ""
		}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top v1.IndexManifest
	if err := json.Unmarshal(raw, &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json %s: %v", raw, err)
	}
	lp, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	root, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := root.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(im.Manifests))
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(cf.Config.Entrypoint, " ") != "/app serve" || cf.Config.User != "65532:65532" || cf.Created.Unix() != 1700000000 ||
			cf.Config.Labels["org.opencontainers.image.version"] != "v1" || cf.Architecture != m.Platform.Architecture {
			t.Errorf("config of %s: %+v", m.Platform, cf)
		}
		size, err := img.Size()
		if err != nil || size == 0 {
			t.Errorf("manifest size %d, %v", size, err)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.tar")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no output", []string{"-name", "a:b", "-file", "/f=" + f}, "-o and -name"},
		{"no file", []string{"-o", out, "-name", "a:b"}, "no -file"},
		{"bad format", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f, "-format", "zip"}, "archive or layout"},
		{"bad platform", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f, "-platform", "amd64"}, "os/arch"},
		{"bad file", []string{"-o", out, "-name", "a:b", "-file", "/f"}, "DEST=SRC"},
		{"bad mode", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f + ":999"}, "octal"},
		{"bad entrypoint", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f, "-entrypoint", "/a b"}, "JSON array"},
		{"bad json", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f, "-cmd", `["a"`}, "JSON array"},
		{"bad link", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f, "-link", "/x"}, "DEST=TARGET"},
		{"bad label", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f, "-label", "nolabel"}, "KEY=value"},
		{"extra", []string{"-o", out, "-name", "a:b", "-file", "/f=" + f, "x"}, "unexpected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, func(string) string { return "" }, &bytes.Buffer{})
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run: %v, want a usage error with %q", err, tc.want)
			}
		})
	}
	// a missing source is not a usage error but fails
	err := run([]string{"-o", out, "-name", "a:b", "-file", "/f=" + filepath.Join(dir, "none")}, func(string) string { return "" }, &bytes.Buffer{})
	var ue usageError
	if err == nil || errors.As(err, &ue) {
		t.Errorf("missing source: %v, want a plain error", err)
	}
}

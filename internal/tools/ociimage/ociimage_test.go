package ociimage

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var created = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

// build builds a two-platform index of a binary and a data file.
func build(t *testing.T, dir string) v1.ImageIndex {
	t.Helper()
	var imgs []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, arch+"-bin")
		if err := os.WriteFile(bin, []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		img, err := Build(Platform{OS: "linux", Architecture: arch}, []File{
			{Path: "/usr/bin/app", Source: bin},
			{Path: "/etc/app/config.yaml", Data: []byte("a: 1\n")},
			{Path: "/openstack/healthcheck", Link: "/usr/bin/app"},
		}, Config{
			Entrypoint: []string{"/usr/bin/app"}, Cmd: []string{"serve"}, User: "65532:65532",
			Env: []string{"A=b"}, ExposedPorts: []string{"8080", "53/udp"},
			Labels: map[string]string{"org.opencontainers.image.source": "https://example.org/vitals", "other": "x"},
		}, created)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	idx, err := Index(imgs...)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestArchiveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	idx := build(t, dir)
	archive := filepath.Join(dir, "img.tar")
	if err := WriteArchive(archive, "localhost/vitals/app:test", idx); err != nil {
		t.Fatal(err)
	}
	// unpack the archive and read it back as an OCI layout
	unpacked := filepath.Join(dir, "unpacked")
	untar(t, archive, unpacked)
	raw, err := os.ReadFile(filepath.Join(unpacked, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top v1.IndexManifest
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: want one image index, got %+v", top.Manifests)
	}
	d := top.Manifests[0]
	if d.Annotations[AnnotationImageName] != "localhost/vitals/app:test" || d.Annotations[AnnotationRefName] != "localhost/vitals/app:test" {
		t.Errorf("index.json annotations %v: want the reference in %s and %s", d.Annotations, AnnotationImageName, AnnotationRefName)
	}
	lp, err := layout.FromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	inner, err = inner.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.Annotations["org.opencontainers.image.source"] != "https://example.org/vitals" || im.Annotations["other"] != "" {
		t.Errorf("index annotations %v: want the OCI labels only", im.Annotations)
	}
	var archs []string
	for _, m := range im.Manifests {
		if m.MediaType != types.OCIManifestSchema1 || m.Platform == nil || m.Platform.OS != "linux" {
			t.Errorf("manifest %+v: want an OCI manifest of a linux platform", m)
			continue
		}
		archs = append(archs, m.Platform.Architecture)
		img, err := inner.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.Architecture != m.Platform.Architecture || strings.Join(c.Entrypoint, " ") != "/usr/bin/app" || strings.Join(c.Cmd, " ") != "serve" ||
			c.User != "65532:65532" || strings.Join(c.Env, ",") != "A=b" || c.Labels["other"] != "x" || !cf.Created.Time.Equal(created) {
			t.Errorf("config of %s: %+v", m.Platform.Architecture, cf)
		}
		if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
			t.Errorf("exposed ports %v lack 8080/tcp", c.ExposedPorts)
		}
		if _, ok := c.ExposedPorts["53/udp"]; !ok {
			t.Errorf("exposed ports %v lack 53/udp", c.ExposedPorts)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers: %d, %v", len(layers), err)
		}
		if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
			t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(created) {
				t.Errorf("%s: owner %d:%d, time %s", h.Name, h.Uid, h.Gid, h.ModTime)
			}
			got[h.Name] = string(b) + h.Linkname + "|" + os.FileMode(h.Mode).String()
		}
		rc.Close()
		want := map[string]string{
			"etc/": "|-rwxr-xr-x", "etc/app/": "|-rwxr-xr-x", "etc/app/config.yaml": "a: 1\n|-rw-r--r--",
			"openstack/": "|-rwxr-xr-x", "openstack/healthcheck": "/usr/bin/app|-rwxrwxrwx", "usr/": "|-rwxr-xr-x", "usr/bin/": "|-rwxr-xr-x", "usr/bin/app": "binary for " + m.Platform.Architecture + "|-rwxr-xr-x",
		}
		if len(got) != len(want) {
			t.Errorf("layer of %s: %v, want %v", m.Platform.Architecture, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("layer of %s: %s = %q, want %q", m.Platform.Architecture, k, got[k], v)
			}
		}
	}
	if strings.Join(archs, ",") != "amd64,arm64" {
		t.Errorf("platforms %v, want amd64 and arm64", archs)
	}
}

func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	a, b := build(t, dir), build(t, dir)
	da, err := a.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Errorf("two builds of the same input: %s and %s", da, db)
	}
}

func TestLayoutRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	idx := build(t, dir)
	out := filepath.Join(dir, "layout")
	if err := WriteLayout(out, "localhost/x:1", idx); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(out, "localhost/x:1", idx); err == nil {
		t.Error("a second layout into the same directory: want an error")
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	linux := Platform{OS: "linux", Architecture: "amd64"}
	tests := []struct {
		name  string
		p     Platform
		files []File
		cfg   Config
		want  string
	}{
		{"relative path", linux, []File{{Path: "app", Data: []byte("x")}}, Config{}, "absolute, clean path"},
		{"unclean path", linux, []File{{Path: "/a/../app", Data: []byte("x")}}, Config{}, "absolute, clean path"},
		{"twice", linux, []File{{Path: "/app", Data: []byte("x")}, {Path: "/app", Data: []byte("y")}}, Config{}, "given twice"},
		{"file and directory", linux, []File{{Path: "/a", Data: []byte("x")}, {Path: "/a/b", Data: []byte("y")}}, Config{}, "also a directory"},
		{"missing source", linux, []File{{Path: "/app", Source: filepath.Join(dir, "none")}}, Config{}, "no such file"},
		{"directory source", linux, []File{{Path: "/app", Source: dir}}, Config{}, "not a regular file"},
		{"no files", linux, nil, Config{}, "no files"},
		{"link with contents", linux, []File{{Path: "/app", Link: "/x", Data: []byte("x")}}, Config{}, "no contents"},
		{"no platform", Platform{}, []File{{Path: "/app", Data: []byte("x")}}, Config{}, "os and architecture"},
		{"bad env", linux, []File{{Path: "/app", Data: []byte("x")}}, Config{Env: []string{"NOVALUE"}}, "NAME=value"},
		{"bad port", linux, []File{{Path: "/app", Data: []byte("x")}}, Config{ExposedPorts: []string{"http"}}, "PORT/tcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.p, tc.files, tc.cfg, created)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build: %v, want an error with %q", err, tc.want)
			}
		})
	}
	img, err := Build(linux, []File{{Path: "/app", Data: []byte("x")}}, Config{}, created)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Index(img, img); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("Index of one platform twice: %v", err)
	}
	if _, err := Index(); err == nil {
		t.Error("Index of nothing: want an error")
	}
}

func TestParsePlatform(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"linux/amd64", "linux/amd64", true}, {"linux/arm64", "linux/arm64", true}, {"linux/arm/v7", "linux/arm/v7", true},
		{"linux", "", false}, {"linux/", "", false}, {"/amd64", "", false}, {"linux/arm/", "", false}, {"a/b/c/d", "", false},
	} {
		p, err := ParsePlatform(tc.in)
		if (err == nil) != tc.ok || (tc.ok && p.String() != tc.want) {
			t.Errorf("ParsePlatform(%q) = %s, %v", tc.in, p.String(), err)
		}
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -xf %s: %v\n%s", archive, err, out)
	}
}

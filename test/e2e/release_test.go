package e2e

// What make release writes (checked by TestGettingStarted, which runs it as docs/getting-started.md says): the chart package
// carries the release's version (as appVersion too, so that the images it names are the release's) and
// its README; each image archive is an OCI image layout in a tar file, named as the chart's default
// repositories, with one image per platform (linux/amd64, linux/arm64) whose binaries are static ELF files
// of that architecture, whose configuration runs the right entrypoint as the right user, and whose OCI
// labels carry the version and the commit. A user's own tool then takes them: pushed with skopeo (as the
// document says) to a registry (go-containerregistry's, in process, plain HTTP) and read back by tag (both
// platforms) and by platform; loaded by Podman and run, printing the release's version.

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// relUntar extracts the tar file into a new directory.
func relUntar(t *testing.T, file string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
}

// relImageFiles reads the files of an image's (single) layer.
func relImageFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files["/"+strings.TrimPrefix(h.Name, "/")] = b
		}
	}
}

// relCheckArtifacts checks what `make release` wrote into out for version (built from commit): the chart
// package, the image archives (their platforms, binaries, configurations and labels), SHA256SUMS; pushes
// each image index to an in-process registry and pulls it back; and, with Podman, loads and runs them.
func relCheckArtifacts(t *testing.T, out, version, commit string) {
	t.Helper()
	want := map[string]string{"chart": "vitals-" + version + ".tgz", "operator": "vitals-operator-" + version + ".oci.tar",
		"agent": "vitals-agent-" + version + ".oci.tar"}

	// SHA256SUMS holds every artifact's digest.
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range want {
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		d := sha256.Sum256(data)
		if !strings.Contains(string(sums), hex.EncodeToString(d[:])+"  "+f) {
			t.Errorf("SHA256SUMS lacks %s's digest:\n%s", f, sums)
		}
	}

	// The chart: the release's version and appVersion, its README.
	helm := testenv.Helm(t)
	chart := runHelm(t, helm, "show", "chart", filepath.Join(out, want["chart"]))
	if !strings.Contains(chart, "version: "+version) || !strings.Contains(chart, "appVersion: "+version) {
		t.Errorf("helm show chart:\n%s", chart)
	}
	if readme := runHelm(t, helm, "show", "readme", filepath.Join(out, want["chart"])); !strings.Contains(readme, "The vitals chart") {
		t.Errorf("the chart package has no README")
	}

	skopeo := testenv.Skopeo(t)
	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	for _, im := range []struct {
		kind, repo string
		files      []string
		entrypoint []string
		user       string
	}{
		{"operator", "vitals", []string{"/vitals", "/healthcheck"}, []string{"/vitals"}, "65532:65532"},
		{"agent", "vitals-agent", []string{"/vitals-agent", "/vitals-cni"}, []string{"/vitals-agent"}, ""},
	} {
		t.Run(im.kind, func(t *testing.T) {
			dir := relUntar(t, filepath.Join(out, want[im.kind]))
			top, tm := relTopIndex(t, dir)
			ref := "docker.io/vitalsproject/" + im.repo + ":" + version
			if got := tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != ref {
				t.Errorf("the archive names %q, want %s (the chart's default repository)", got, ref)
			}
			idx, err := top.ImageIndex(tm.Manifests[0].Digest)
			if err != nil {
				t.Fatal(err)
			}
			im2, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var plats []string
			for _, m := range im2.Manifests {
				plats = append(plats, m.Platform.String())
				img, err := idx.Image(m.Digest)
				if err != nil {
					t.Fatal(err)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(cf.Config.Entrypoint, im.entrypoint) || cf.Config.User != im.user ||
					cf.Config.Labels["org.opencontainers.image.version"] != version ||
					cf.Config.Labels["org.opencontainers.image.revision"] != commit {
					t.Errorf("%s config: entrypoint %v user %q labels %v", m.Platform, cf.Config.Entrypoint, cf.Config.User, cf.Config.Labels)
				}
				files := relImageFiles(t, img)
				machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[m.Platform.Architecture]
				for _, f := range im.files {
					e, err := elf.NewFile(bytes.NewReader(files[f]))
					if err != nil {
						t.Errorf("%s %s: not an ELF file: %v", m.Platform, f, err)
						continue
					}
					if e.Machine != machine {
						t.Errorf("%s %s: built for %s", m.Platform, f, e.Machine)
					}
					if slices.ContainsFunc(e.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
						t.Errorf("%s %s: dynamically linked (it has an interpreter): the image has no libc", m.Platform, f)
					}
				}
				if im.kind == "operator" && len(files["/etc/ssl/certs/ca-certificates.crt"]) == 0 {
					t.Errorf("%s: no CA bundle", m.Platform)
				}
			}
			slices.Sort(plats)
			if !slices.Equal(plats, []string{"linux/amd64", "linux/arm64"}) {
				t.Errorf("platforms %v, want linux/amd64 and linux/arm64", plats)
			}

			// Pushed as docs/getting-started.md says (skopeo copy --all), then read back by tag: the same
			// index, and the linux/arm64 image's configuration by platform.
			dst := fmt.Sprintf("docker://%s/team/%s:%s", host, im.repo, version)
			relSkopeo(t, skopeo, "copy", "--all", "--dest-tls-verify=false", "oci-archive:"+filepath.Join(out, want[im.kind]), dst)
			// skopeo writes the index anew (its own serialization): the same platforms, not the same bytes.
			var read struct {
				Manifests []struct{ Platform v1.Platform }
			}
			if err := json.Unmarshal(relSkopeo(t, skopeo, "inspect", "--tls-verify=false", "--raw", dst), &read); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range read.Manifests {
				got = append(got, m.Platform.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, plats) {
				t.Errorf("%s read back: platforms %v, pushed %v", dst, got, plats)
			}
			var cf struct {
				Architecture string `json:"architecture"`
				OS           string `json:"os"`
			}
			if err := json.Unmarshal(relSkopeo(t, skopeo, "--override-os", "linux", "--override-arch", "arm64", "inspect", "--tls-verify=false", "--config", dst), &cf); err != nil || cf.Architecture != "arm64" || cf.OS != "linux" {
				t.Errorf("%s for linux/arm64: config %+v, %v", dst, cf, err)
			}
		})
	}

	// Loaded by a container engine and run: the binaries print the release's version.
	t.Run("podman load", func(t *testing.T) {
		bin := testenv.Podman(t)
		store, err := os.MkdirTemp("", "vitals-podman-release-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(store) })
		base := []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
			"--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"}
		podman := func(args ...string) string {
			t.Helper()
			out, err := exec.Command(bin, append(append([]string{}, base...), args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return strings.TrimSpace(string(out))
		}
		for _, im := range []struct{ archive, ref, binary string }{
			{want["operator"], "docker.io/vitalsproject/vitals:" + version, "vitals"},
			{want["agent"], "docker.io/vitalsproject/vitals-agent:" + version, "vitals-agent"},
		} {
			podman("load", "-q", "-i", filepath.Join(out, im.archive))
			got := podman("run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", im.ref, "--version")
			if !strings.HasPrefix(got, im.binary+" "+version+" (commit "+commit) {
				t.Errorf("%s --version in %s: %q", im.binary, im.ref, got)
			}
		}
		// The operator image's second binary, the container healthcheck.
		got := podman("run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
			"--entrypoint", "/healthcheck", "docker.io/vitalsproject/vitals:"+version, "--version")
		if !strings.HasPrefix(got, "healthcheck "+version) {
			t.Errorf("healthcheck --version: %q", got)
		}
	})
}

// relPlatformImage returns the image of platform p from the OCI image layout in dir (whose index.json names
// one image index).
// relTopIndex reads the OCI layout in dir: its top index and that index's manifest, which must name exactly
// one image index (the release's multi-platform image).
func relTopIndex(t *testing.T, dir string) (v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil || len(tm.Manifests) != 1 {
		t.Fatalf("index.json: %v, %+v; want one image index", err, tm)
	}
	return top, tm
}

func relPlatformImage(t *testing.T, dir string, p v1.Platform) v1.Image {
	t.Helper()
	top, tm := relTopIndex(t, dir)
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.Satisfies(p) {
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("no image for %s in %s", p, dir)
	return nil
}

// relSkopeo runs skopeo with args and returns its standard output.
func relSkopeo(t *testing.T, skopeo string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(skopeo, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

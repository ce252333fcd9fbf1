package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the index's descriptor in index.json that name the image.
const (
	// AnnotationImageName is the reference containerd's importer (ctr images import) gives the image.
	AnnotationImageName = "io.containerd.image.name"
	// AnnotationRefName is the OCI image layout's reference annotation (podman, skopeo).
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// LabelPrefix is the prefix of the OCI labels (org.opencontainers.image.source, .version, ...), which are
	// also set as annotations of the index.
	LabelPrefix = "org.opencontainers.image."
)

// File is one file of an image: the contents of Source (a file of the build machine) or Data, or a
// symbolic link to Link, at Path.
type File struct {
	// Path is the absolute path in the image, such as /vitals; parent directories are made (mode 0755).
	Path string
	// Source is a regular file to copy; empty: Data is the contents.
	Source string
	Data   []byte
	// Link makes Path a symbolic link to Link (such as /healthcheck); Source and Data are then empty.
	Link string
	// Mode is the permission bits; 0: Source's, or 0644 for Data.
	Mode fs.FileMode
}

// Config is the image's run configuration (the OCI image config's "config").
type Config struct {
	Entrypoint []string
	Cmd        []string
	// User is "uid", "uid:gid" or a name (a name needs /etc/passwd in the image).
	User       string
	Env        []string // NAME=value
	WorkingDir string
	// ExposedPorts are "8080/tcp" or "8080" (tcp).
	ExposedPorts []string
	Labels       map[string]string
	StopSignal   string
}

// Platform is the platform of one image: linux/amd64, linux/arm64, linux/arm/v7.
type Platform = v1.Platform

// ParsePlatform parses os/arch[/variant].
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] == "") {
		return Platform{}, fmt.Errorf("platform %q: expected os/arch[/variant], such as linux/amd64 or linux/arm64", s)
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// Build returns the image of one platform: one layer holding files, and cfg. Created is the image's
// creation time and every file's modification time (a fixed time makes the image reproducible).
func Build(p Platform, files []File, cfg Config, created time.Time) (v1.Image, error) {
	if p.OS == "" || p.Architecture == "" {
		return nil, fmt.Errorf("build image: platform %q: os and architecture are required", p.String())
	}
	if err := validateConfig(cfg); err != nil {
		return nil, fmt.Errorf("build image for %s: %w", p.String(), err)
	}
	layerTar, err := layerTar(files, created)
	if err != nil {
		return nil, fmt.Errorf("build image for %s: %w", p.String(), err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("build image for %s: layer: %w", p.String(), err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "vitals ociimage", Comment: "files"}})
	if err != nil {
		return nil, fmt.Errorf("build image for %s: %w", p.String(), err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build image for %s: %w", p.String(), err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, User: cfg.User, Env: cfg.Env, WorkingDir: cfg.WorkingDir,
		Labels: cfg.Labels, StopSignal: cfg.StopSignal,
	}
	if len(cfg.ExposedPorts) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, port := range cfg.ExposedPorts {
			if !strings.Contains(port, "/") {
				port += "/tcp"
			}
			cf.Config.ExposedPorts[port] = struct{}{}
		}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("build image for %s: config: %w", p.String(), err)
	}
	return img, nil
}

func validateConfig(cfg Config) error {
	for _, e := range cfg.Env {
		if name, _, ok := strings.Cut(e, "="); !ok || name == "" {
			return fmt.Errorf("env %q: expected NAME=value", e)
		}
	}
	for _, port := range cfg.ExposedPorts {
		num, proto, _ := strings.Cut(port, "/")
		if num == "" || strings.Trim(num, "0123456789") != "" || (proto != "" && proto != "tcp" && proto != "udp" && proto != "sctp") {
			return fmt.Errorf("exposed port %q: expected PORT or PORT/tcp|udp|sctp", port)
		}
	}
	for k := range cfg.Labels {
		if k == "" {
			return errors.New("label: empty key")
		}
	}
	return nil
}

// layerTar returns the uncompressed tar of files, with their parent directories, sorted by path.
func layerTar(files []File, mtime time.Time) ([]byte, error) {
	type entry struct {
		hdr  *tar.Header
		data []byte
	}
	entries := map[string]entry{}
	dir := func(p string) {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			name := strings.TrimPrefix(d, "/") + "/"
			if _, ok := entries[name]; !ok {
				entries[name] = entry{hdr: &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}}
			}
		}
	}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("file %q: expected an absolute, clean path of a file in the image", f.Path)
		}
		name := strings.TrimPrefix(f.Path, "/")
		if e, ok := entries[name]; ok && e.hdr.Typeflag != tar.TypeDir {
			return nil, fmt.Errorf("file %s: given twice", f.Path)
		}
		data, mode := f.Data, f.Mode
		if f.Link != "" {
			if f.Source != "" || f.Data != nil {
				return nil, fmt.Errorf("file %s: a link has no contents", f.Path)
			}
			entries[name] = entry{hdr: &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: f.Link, Mode: 0o777, ModTime: mtime, Format: tar.FormatPAX}}
			dir(f.Path)
			continue
		}
		if f.Source != "" {
			st, err := os.Stat(f.Source)
			if err != nil {
				return nil, fmt.Errorf("file %s: %w", f.Path, err)
			}
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("file %s: source %s is not a regular file", f.Path, f.Source)
			}
			if data, err = os.ReadFile(filepath.Clean(f.Source)); err != nil {
				return nil, fmt.Errorf("file %s: %w", f.Path, err)
			}
			if mode == 0 {
				mode = st.Mode().Perm()
			}
		}
		if mode == 0 {
			mode = 0o644
		}
		entries[name] = entry{hdr: &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(mode.Perm()), Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}, data: data}
		dir(f.Path)
	}
	if len(entries) == 0 {
		return nil, errors.New("no files")
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		if e.hdr.Typeflag == tar.TypeDir {
			if f, ok := entries[strings.TrimSuffix(n, "/")]; ok {
				return nil, fmt.Errorf("file /%s: also a directory of /%s", f.hdr.Name, n)
			}
		}
		if err := tw.WriteHeader(e.hdr); err != nil {
			return nil, fmt.Errorf("tar %s: %w", n, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Index returns the image index of imgs, one manifest per platform (from each image's config), with the OCI
// labels (LabelPrefix) of the first image as the index's annotations.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	if len(imgs) == 0 {
		return nil, errors.New("image index: no image")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	var annotations map[string]string
	for i, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("image index: image %d: %w", i, err)
		}
		p := cf.Platform()
		if p == nil || p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("image index: image %d has no platform", i)
		}
		if seen[p.String()] {
			return nil, fmt.Errorf("image index: platform %s given twice", p.String())
		}
		seen[p.String()] = true
		if i == 0 {
			for k, v := range cf.Config.Labels {
				if strings.HasPrefix(k, LabelPrefix) {
					if annotations == nil {
						annotations = map[string]string{}
					}
					annotations[k] = v
				}
			}
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	if annotations != nil {
		idx = mutate.Annotations(idx, annotations).(v1.ImageIndex)
	}
	return idx, nil
}

// WriteLayout writes idx into the OCI image layout dir (created; it must not hold a layout already), named
// ref (such as localhost/vitals/pause:test) in index.json.
func WriteLayout(dir, ref string, idx v1.ImageIndex) error {
	if ref == "" {
		return errors.New("write image layout: empty reference")
	}
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		return fmt.Errorf("write image layout %s: it holds a layout already", dir)
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write image layout %s: %w", dir, err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationImageName: ref, AnnotationRefName: ref})); err != nil {
		return fmt.Errorf("write image layout %s: %w", dir, err)
	}
	return nil
}

// WriteArchive writes idx as an OCI archive: the OCI image layout of WriteLayout in a tar file at file
// (replaced atomically).
func WriteArchive(file, ref string, idx v1.ImageIndex) error {
	tmp, err := os.MkdirTemp(filepath.Dir(file), ".ociimage-")
	if err != nil {
		return fmt.Errorf("write image archive %s: %w", file, err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "layout")
	if err := WriteLayout(dir, ref, idx); err != nil {
		return err
	}
	out := filepath.Join(tmp, "archive.tar")
	if err := tarDir(dir, out); err != nil {
		return fmt.Errorf("write image archive %s: %w", file, err)
	}
	if err := os.Rename(out, file); err != nil {
		return fmt.Errorf("write image archive %s: %w", file, err)
	}
	return nil
}

// tarDir writes the files under dir into the tar file out, with paths relative to dir, sorted.
func tarDir(dir, out string) error {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

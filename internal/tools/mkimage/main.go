// Command mkimage builds a FROM-scratch container image of one or more platforms from files of the build
// machine and writes it as an OCI archive (a tar file) or an OCI image layout (a directory), with package
// internal/tools/ociimage. No registry, base image or container engine is needed.
//
//	go run ./internal/tools/mkimage -o pause.tar -name localhost/vitals/pause:test \
//	    -file /pause=_out/pause -entrypoint /pause
//	go run ./internal/tools/mkimage -o _out/agent -format layout -name vitalsproject/vitals-agent:v1.2.3 \
//	    -platform linux/amd64,linux/arm64 -file '/vitals-agent=_out/{os}_{arch}/vitals-agent' \
//	    -entrypoint /vitals-agent -expose 8090 -label org.opencontainers.image.version=v1.2.3
//	go run ./internal/tools/mkimage ... -file /healthcheck=bin/healthcheck -link /openstack/healthcheck=/healthcheck
//
// In -file SRC, {os}, {arch} and {variant} are replaced by each platform's. -entrypoint and -cmd take a
// JSON array (["/vitals","operator"]) or one word. The creation time (and every file's time) is
// $SOURCE_DATE_EPOCH, else the Unix epoch, so the same input gives the same image. Import the archive with
// `ctr -n k8s.io images import FILE`. Bad flags exit 2.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/vitalsproject/vitals/internal/tools/ociimage"
)

// list is a repeatable flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	if err := run(os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(args []string, getenv func(string) string, stderr io.Writer) error {
	fl := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var files, links, platforms, env, labels, expose list
	out := fl.String("o", "", "output: the archive file, or the layout directory with -format layout (required)")
	format := fl.String("format", "archive", "archive (an OCI archive, a tar file) or layout (an OCI image layout directory)")
	name := fl.String("name", "", "the image's reference, such as localhost/vitals/pause:test (required)")
	entrypoint := fl.String("entrypoint", "", `the entrypoint: a JSON array (["/vitals","operator"]) or one word`)
	cmd := fl.String("cmd", "", "the command (arguments of the entrypoint): a JSON array or one word")
	user := fl.String("user", "", "the user: uid or uid:gid")
	workdir := fl.String("workdir", "", "the working directory")
	fl.Var(&files, "file", "DEST=SRC[:MODE]: the file SRC of this machine at DEST in the image ({os}, {arch}, {variant} in SRC: the platform's); MODE octal (default SRC's); repeatable")
	fl.Var(&links, "link", "DEST=TARGET: a symbolic link at DEST to TARGET (such as /openstack/healthcheck=/healthcheck); repeatable")
	fl.Var(&platforms, "platform", "os/arch[/variant], comma-separated or repeated (default linux/"+runtime.GOARCH+")")
	fl.Var(&env, "env", "NAME=value; repeatable")
	fl.Var(&labels, "label", "KEY=value, such as org.opencontainers.image.source=URL; repeatable")
	fl.Var(&expose, "expose", "PORT[/tcp|udp]; repeatable")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fl.NArg() > 0 {
		return usagef("unexpected arguments %q", fl.Args())
	}
	if *out == "" || *name == "" {
		return usagef("-o and -name are required")
	}
	if *format != "archive" && *format != "layout" {
		return usagef("-format: expected archive or layout, got %q", *format)
	}
	if len(files) == 0 {
		return usagef("no -file: an image needs at least one")
	}
	var cfg ociimage.Config
	var err error
	if cfg.Entrypoint, err = words("-entrypoint", *entrypoint); err != nil {
		return err
	}
	if cfg.Cmd, err = words("-cmd", *cmd); err != nil {
		return err
	}
	cfg.User, cfg.WorkingDir, cfg.Env, cfg.ExposedPorts = *user, *workdir, env, expose
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return usagef("-label %q: expected KEY=value", l)
		}
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels[k] = v
	}
	created := time.Unix(0, 0).UTC()
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return usagef("SOURCE_DATE_EPOCH=%q: expected seconds since the Unix epoch", s)
		}
		created = time.Unix(sec, 0).UTC()
	}
	var plats []ociimage.Platform
	for _, ps := range platforms {
		for _, s := range strings.Split(ps, ",") {
			p, err := ociimage.ParsePlatform(strings.TrimSpace(s))
			if err != nil {
				return usageError{"-platform: " + err.Error()}
			}
			plats = append(plats, p)
		}
	}
	if len(plats) == 0 {
		plats = []ociimage.Platform{{OS: "linux", Architecture: runtime.GOARCH}}
	}
	var imgs []v1.Image
	for _, p := range plats {
		fs, err := platformFiles(files, p)
		if err != nil {
			return err
		}
		for _, l := range links {
			dest, target, ok := strings.Cut(l, "=")
			if !ok || dest == "" || target == "" {
				return usagef("-link %q: expected DEST=TARGET", l)
			}
			fs = append(fs, ociimage.File{Path: dest, Link: target})
		}
		img, err := ociimage.Build(p, fs, cfg, created)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	idx, err := ociimage.Index(imgs...)
	if err != nil {
		return err
	}
	if *format == "layout" {
		return ociimage.WriteLayout(*out, *name, idx)
	}
	return ociimage.WriteArchive(*out, *name, idx)
}

// words parses a JSON array of strings or one word.
func words(flagName, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var w []string
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			return nil, usagef("%s %s: expected a JSON array of strings: %v", flagName, s, err)
		}
		return w, nil
	}
	if strings.ContainsAny(s, " \t") {
		return nil, usagef(`%s %q: expected one word or a JSON array (["/bin","arg"])`, flagName, s)
	}
	return []string{s}, nil
}

// platformFiles parses DEST=SRC[:MODE] for platform p.
func platformFiles(specs []string, p ociimage.Platform) ([]ociimage.File, error) {
	r := strings.NewReplacer("{os}", p.OS, "{arch}", p.Architecture, "{variant}", p.Variant)
	var out []ociimage.File
	for _, spec := range specs {
		dest, src, ok := strings.Cut(spec, "=")
		if !ok || dest == "" || src == "" {
			return nil, usagef("-file %q: expected DEST=SRC[:MODE]", spec)
		}
		f := ociimage.File{Path: dest}
		if i := strings.LastIndexByte(src, ':'); i >= 0 {
			m, err := strconv.ParseUint(src[i+1:], 8, 32)
			if err != nil || m > 0o777 {
				return nil, usagef("-file %q: MODE %q: expected octal permission bits such as 0755", spec, src[i+1:])
			}
			f.Mode, src = fs.FileMode(m), src[:i]
		}
		f.Source = r.Replace(src)
		out = append(out, f)
	}
	return out, nil
}

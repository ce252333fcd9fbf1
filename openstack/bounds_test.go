package openstack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// TestLocalFilesBounded: the files the auth loaders read (clouds.yaml, secure.yaml, the CA bundle and the
// certificates a cloud names) are refused when they are not regular files of a bounded size, with an error
// naming the file, before anything reads them. In this order, stopping at the first failure: a loader
// without the bound fails at the directory, before it is given a named pipe or /dev/zero.
func TestLocalFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cloudsFor := func(extra string) string {
		return "clouds:\n  prod:\n" + extra + "    auth:\n      auth_url: http://127.0.0.1:5000/v3\n      username: u\n      password: p\n"
	}
	good := write("clouds.yaml", cloudsFor(""))
	// secure.yaml beside a clouds.yaml of its own directory
	secureDir := filepath.Join(dir, "secure")
	if err := os.Mkdir(secureDir, 0o700); err != nil {
		t.Fatal(err)
	}
	withSecure := filepath.Join(secureDir, "clouds.yaml")
	if err := os.WriteFile(withSecure, []byte(cloudsFor("")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(secureDir, "secure.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	caZero := write("ca-zero.yaml", cloudsFor("    cacert: /dev/zero\n"))
	keyFifo := write("key-fifo.yaml", cloudsFor("    cert: "+good+"\n    key: "+fifo+"\n"))

	fromClouds := func(path string) func() error {
		return func() error {
			_, err := AuthFromCloudsYAML(CloudsYAMLOptions{Cloud: "prod", Paths: []string{path}, Getenv: envOf(nil)})
			return err
		}
	}
	for _, tc := range []struct {
		name string
		load func() error
		file string // named in the error
		want error
	}{
		{"CA bundle a directory", func() error {
			_, ferr := tlsConfig(dir, "", false)
			if ferr == nil {
				return nil
			}
			return errors.New(ferr.msg)
		}, dir, nil},
		{"CA bundle a named pipe", func() error {
			_, ferr := tlsConfig(fifo, "", false)
			if ferr == nil {
				return nil
			}
			return errors.New(ferr.msg)
		}, fifo, nil},
		{"clouds.yaml a named pipe", fromClouds(fifo), fifo, bounded.ErrNotRegular},
		{"clouds.yaml /dev/zero", fromClouds("/dev/zero"), "/dev/zero", bounded.ErrNotRegular},
		{"secure.yaml a named pipe", fromClouds(withSecure), filepath.Join(secureDir, "secure.yaml"), bounded.ErrNotRegular},
		{"cacert /dev/zero", fromClouds(caZero), "/dev/zero", bounded.ErrNotRegular},
		{"key a named pipe", fromClouds(keyFifo), fifo, bounded.ErrNotRegular},
	} {
		done := make(chan error, 1)
		go func() { done <- tc.load() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: still reading after a minute", tc.name)
		}
		var ce *config.Error
		if err == nil || !strings.Contains(err.Error(), tc.file+": not a regular file") ||
			(tc.want != nil && (!errors.Is(err, tc.want) || !errors.As(err, &ce))) {
			t.Fatalf("%s: error %v; want a config error naming %s as not a regular file", tc.name, err, tc.file)
		}
	}
}

// TestResponseBodyBounded: a Keystone (named by a tenant's Secret) that answers an endless token is cut at
// the limit, with or without a Content-Length, and Connect fails saying so.
func TestResponseBodyBounded(t *testing.T) {
	const limit = 1 << 20
	for _, withLength := range []bool{false, true} {
		t.Run("Content-Length "+strconv.FormatBool(withLength), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := `{"token": {"padding": "` + strings.Repeat("x", 8<<20) + `"}}`
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				w.Header().Set("X-Subject-Token", "t")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			a, err := AuthFromEnv(envOf(map[string]string{"OS_AUTH_URL": srv.URL + "/v3", "OS_USERNAME": "u", "OS_PASSWORD": "p", "OS_PROJECT_ID": "p"}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = Connect(ctx, Config{Auth: a, MaxResponseBytes: limit})
			if err == nil || !errors.Is(err, bounded.ErrTooLarge) || !strings.Contains(err.Error(), "larger than the operator reads") {
				t.Fatalf("Connect = %v; want the token response refused as too large", err)
			}
		})
	}
}

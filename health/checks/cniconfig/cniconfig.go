package cniconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// DefaultDir is where kubelet's container runtime looks for CNI network configurations.
const DefaultDir = "/etc/cni/net.d"

// Extensions are the file name extensions that libcni loads, in the order it documents.
var Extensions = []string{".conf", ".conflist", ".json"}

// Network is what the check learned about the configuration in use.
type Network struct {
	File       string
	Name       string
	CNIVersion string
	// Plugins are the plugin types, in chain order.
	Plugins []string
}

// Options configure the check.
type Options struct {
	// Dir is the CNI configuration directory (default DefaultDir); absolute.
	Dir string
}

// Check returns the check: it fails unless Load(opts.Dir) succeeds.
func Check(opts Options) (checks.Func, error) {
	if opts.Dir != "" && !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("cni configuration check: Dir %q: expected an absolute path such as %s", opts.Dir, DefaultDir)
	}
	return func(ctx context.Context) error {
		_, err := Load(ctx, opts.Dir)
		return err
	}, nil
}

// Load finds the configuration file the runtime would use in dir and validates it.
func Load(ctx context.Context, dir string) (Network, error) {
	if dir == "" {
		dir = DefaultDir
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Network{}, fmt.Errorf("read CNI configuration directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || !hasExtension(e.Name()) {
			continue
		}
		files = append(files, e.Name())
	}
	if len(files) == 0 {
		return Network{}, fmt.Errorf("no CNI network configuration (%s) in %s", strings.Join(Extensions, ", "), dir)
	}
	sort.Strings(files)
	if err := ctx.Err(); err != nil {
		return Network{}, err
	}
	path := filepath.Join(dir, files[0])
	data, err := bounded.ReadFile(ctx, path, bounded.ConfigSize)
	if err != nil {
		return Network{}, fmt.Errorf("read CNI network configuration: %w", err)
	}
	n, err := Parse(path, data)
	if err != nil {
		return Network{}, err
	}
	return n, nil
}

func hasExtension(name string) bool {
	ext := filepath.Ext(name)
	for _, e := range Extensions {
		if ext == e {
			return true
		}
	}
	return false
}

// conf is the subset of the CNI specification's network configuration that the check validates.
type conf struct {
	CNIVersion *string           `json:"cniVersion"`
	Name       *string           `json:"name"`
	Type       *string           `json:"type"`
	Plugins    []json.RawMessage `json:"plugins"`
}

// Parse validates one network configuration file's content; path is used in messages and to tell a
// .conflist (which needs plugins) from a single-plugin .conf.
func Parse(path string, data []byte) (Network, error) {
	var c conf
	if err := json.Unmarshal(data, &c); err != nil {
		return Network{}, fmt.Errorf("%s: invalid JSON: %s", where(path, data, err), describe(err))
	}
	n := Network{File: path}
	var missing []string
	if c.CNIVersion == nil || *c.CNIVersion == "" {
		missing = append(missing, "cniVersion")
	} else {
		n.CNIVersion = *c.CNIVersion
	}
	if c.Name == nil || *c.Name == "" {
		missing = append(missing, "name")
	} else {
		n.Name = *c.Name
	}
	isList := filepath.Ext(path) == ".conflist" || (c.Plugins != nil && c.Type == nil)
	switch {
	case isList && len(c.Plugins) == 0:
		missing = append(missing, "plugins (a non-empty list)")
	case isList:
		for i, raw := range c.Plugins {
			var p struct {
				Type *string `json:"type"`
			}
			if err := json.Unmarshal(raw, &p); err != nil || p.Type == nil || *p.Type == "" {
				missing = append(missing, fmt.Sprintf("plugins[%d].type", i))
				continue
			}
			n.Plugins = append(n.Plugins, *p.Type)
		}
	case c.Type == nil || *c.Type == "":
		missing = append(missing, "type")
	default:
		n.Plugins = []string{*c.Type}
	}
	if len(missing) > 0 {
		return Network{}, fmt.Errorf("%s: invalid CNI network configuration: missing %s", path, strings.Join(missing, ", "))
	}
	return n, nil
}

// where names the file and, for syntax errors, the line and column.
func where(path string, data []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return path
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}

func describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s: expected %s, got %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

package openstack

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gopkg.in/ini.v1"

	"github.com/vitalsproject/vitals/config"
)

// DefaultINISections are the sections AuthFromINI looks in, in order: Kuryr keeps its Neutron
// credentials in [neutron]; most services keep theirs in [keystone_authtoken].
var DefaultINISections = []string{"neutron", "keystone_authtoken"}

// iniAliases are older or alternative names of keystoneauth options in oslo configuration files.
var iniAliases = map[string][]string{
	"interface":   {"valid_interfaces", "endpoint_type"},
	"region_name": {"os_region_name"},
	"auth_url":    {"auth_uri"},
}

// AuthFromINI reads keystoneauth options (auth_type, auth_url, username, password,
// user_domain_name, project_name, ..., region_name, cafile, insecure) from the first of sections
// (default DefaultINISections) present in the oslo-style INI file at path (kuryr.conf,
// neutron.conf). Errors are *config.Error with the file, the line and the section.option at fault.
func AuthFromINI(path string, sections ...string) (Auth, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Auth{}, &config.Error{File: path, Msg: fmt.Sprintf("read auth configuration: %v", err)}
	}
	return parseAuthINI(path, data, sections)
}

func parseAuthINI(path string, data []byte, sections []string) (Auth, error) {
	if len(sections) == 0 {
		sections = DefaultINISections
	}
	f, err := ini.LoadSources(ini.LoadOptions{
		AllowPythonMultilineValues: true,
		IgnoreInlineComment:        true,
		SkipUnrecognizableLines:    false,
	}, data)
	if err != nil {
		return Auth{}, &config.Error{File: path, Msg: fmt.Sprintf("parse INI: %v", err)}
	}
	var sec *ini.Section
	for _, name := range sections {
		if s, err := f.GetSection(name); err == nil {
			sec = s
			break
		}
	}
	if sec == nil {
		return Auth{}, &config.Error{File: path, Msg: fmt.Sprintf("no auth section: expected one of [%s] with auth_url, username, password, ...",
			strings.Join(sections, "], ["))}
	}
	lookup := func(opt string) (key string, val string) {
		for _, name := range append([]string{opt}, iniAliases[opt]...) {
			for _, k := range []string{name, strings.ReplaceAll(name, "_", "-")} {
				if sec.HasKey(k) {
					return k, strings.TrimSpace(sec.Key(k).String())
				}
			}
		}
		return opt, ""
	}
	get := func(opt string) string { _, v := lookup(opt); return v }
	fail := func(opt, msg string) error {
		key, _ := lookup(opt)
		return &config.Error{File: path, Line: lineOf(data, sec.Name(), key), Field: sec.Name() + "." + key, Msg: msg}
	}
	c := credentialsFrom(get)
	if i := strings.IndexByte(c.Interface, ','); i >= 0 { // valid_interfaces is a list
		c.Interface = strings.TrimSpace(c.Interface[:i])
	}
	if v := get("insecure"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Auth{}, fail("insecure", "expected true or false, got "+strconv.Quote(v))
		}
		c.Insecure = b
	}
	a, ferr := c.toAuth(fmt.Sprintf("%s [%s]", path, sec.Name()))
	if ferr != nil {
		return a, fail(ferr.field, ferr.msg)
	}
	return a, nil
}

// lineOf finds the 1-based line of key in [section] (0 when absent: the section header's line
// then, if any).
func lineOf(data []byte, section, key string) int {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	in, header, n := false, 0, 0
	for sc.Scan() {
		n++
		t := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			in = strings.TrimSpace(t[1:len(t)-1]) == section
			if in {
				header = n
			}
			continue
		}
		if !in || t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		k := t
		if i := strings.IndexAny(t, "=:"); i >= 0 {
			k = t[:i]
		}
		if strings.TrimSpace(k) == key {
			return n
		}
	}
	return header
}

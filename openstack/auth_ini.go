package openstack

import (
	"fmt"
	"strconv"
	"strings"

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
// (default DefaultINISections) that sets auth_url, else the first present, in the oslo-style INI
// file at path (kuryr.conf, neutron.conf), read with config.LoadINI: options in [DEFAULT] are
// inherited, as oslo.config does.
// Errors are *config.Error with the file, the line and the section.option at fault.
func AuthFromINI(path string, sections ...string) (Auth, error) {
	f, err := config.LoadINI(path)
	if err != nil {
		return Auth{}, err
	}
	return authFromINI(f, sections)
}

// authSection returns the first of sections (default DefaultINISections) that sets auth_url (itself
// or through [DEFAULT]), else the first f has (nil: none), and whether it sets auth_url.
func authSection(f *config.INI, sections []string) (sec *config.Section, hasURL bool, names []string) {
	if len(sections) == 0 {
		sections = DefaultINISections
	}
	for _, name := range sections {
		if !f.HasSection(name) {
			continue
		}
		s := f.Section(name)
		for _, k := range append([]string{"auth_url"}, iniAliases["auth_url"]...) {
			if s.Has(k) {
				return s, true, sections
			}
		}
		if sec == nil {
			sec = s
		}
	}
	return sec, false, sections
}

func authFromINI(f *config.INI, sections []string) (Auth, error) {
	sec, _, sections := authSection(f, sections)
	if sec == nil {
		return Auth{}, &config.Error{File: f.File(), Msg: fmt.Sprintf("no auth section: expected one of [%s] with auth_url, username, password, ...",
			strings.Join(sections, "], ["))}
	}
	lookup := func(opt string) (key string, val string) {
		for _, name := range append([]string{opt}, iniAliases[opt]...) {
			if sec.Has(name) {
				return name, strings.TrimSpace(sec.String(name, ""))
			}
		}
		return opt, ""
	}
	get := func(opt string) string { _, v := lookup(opt); return v }
	fail := func(opt, msg string) error {
		key, _ := lookup(opt)
		line := sec.Line(key)
		if line == 0 {
			line = sec.HeaderLine()
		}
		return &config.Error{File: f.File(), Line: line, Field: sec.Name() + "." + key, Msg: msg}
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
	a, ferr := c.toAuth(fmt.Sprintf("%s [%s]", f.File(), sec.Name()))
	if ferr != nil {
		return a, fail(ferr.field, ferr.msg)
	}
	return a, nil
}

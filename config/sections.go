package config

import (
	"fmt"
	"regexp"
	"strings"
)

// KuryrSections are the sections of a kuryr.conf (kuryr-kubernetes' controller and CNI daemon) that are not a
// Vitals reader's own: Kuryr's, os-vif's, and oslo's and keystoneauth's ([DEFAULT], [neutron], ...). A reader
// that accepts a kuryr.conf tolerates them (CheckSections names them in one warning line); any other section it
// does not read is an error.
var KuryrSections = []string{
	// oslo.config, oslo.log, oslo.concurrency, oslo.privsep, keystoneauth
	DefaultSection, "neutron", "keystone_authtoken", "oslo_concurrency", "privsep",
	// Kuryr's own
	"kubernetes", "kuryr-kubernetes", "neutron_defaults", "octavia_defaults", "cache_defaults", "sriov",
	"namespace_subnet", "namespace_sg", "cni_daemon", "cni_health_server", "health_server", "pod_vif_nested",
	"vif_pool", "binding", "prometheus_exporter", "pool_manager", "ingress", "vhostuser",
	"subnet_caching", "node_driver_caching", "namespace_handler_caching", "np_handler_caching", "pod_ip_caching",
	"vif_handler_caching",
	// os-vif, which Kuryr's CNI daemon loads
	"os_vif_ovs", "os_vif_linux_bridge", "vif_plug_ovs_privileged", "vif_plug_linux_bridge_privileged",
}

// NearMiss is the edit distance within which a section name counts as a misspelling of one the reader reads.
const NearMiss = 2

// CheckSections checks the sections of f for a reader that reads the sections read and tolerates, without using
// them, the sections tolerated (those of the programs whose file it shares, e.g. KuryrSections). It records an
// error (file and line of the section's header) for a section within NearMiss edits of one it reads
// ("[operater]": the settings meant for [operator] would be dropped), naming that one, even when it is tolerated;
// and for any other section neither read nor tolerated. It returns the tolerated sections present that it does not
// read, as "[name]", for the reader's one warning line.
func (f *INI) CheckSections(read, tolerated []string) (ignored []string) {
	isRead := make(map[string]bool, len(read))
	for _, n := range read {
		isRead[n] = true
	}
	isTolerated := make(map[string]bool, len(tolerated))
	for _, n := range tolerated {
		isTolerated[n] = true
	}
	for _, name := range f.order {
		if isRead[name] {
			continue
		}
		s := f.sections[name]
		if like := resembles(name, read); like != "" {
			f.errs = append(f.errs, &Error{File: f.file, Line: s.line, Field: sectionField(name),
				Msg: fmt.Sprintf("unknown section, within %d edits of [%s]: a misspelling? Its options would be ignored (sections read: %s)", NearMiss, like, bracketed(read))})
			continue
		}
		if isTolerated[name] {
			ignored = append(ignored, "["+name+"]")
			continue
		}
		f.errs = append(f.errs, &Error{File: f.file, Line: s.line, Field: sectionField(name),
			Msg: fmt.Sprintf("unknown section (sections read: %s; Kuryr's and oslo's own are ignored)", bracketed(read))})
	}
	return ignored
}

// plainName is a section name shown as it is in an error; any other is described, never shown (a file given by
// mistake, a token, may stand in a header).
var plainName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func sectionField(name string) string {
	if plainName.MatchString(name) {
		return "[" + name + "]"
	}
	return fmt.Sprintf("a section header of %d bytes (not shown)", len(name))
}

func bracketed(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "[" + n + "]"
	}
	return strings.Join(out, ", ")
}

// resembles returns the first of names within NearMiss edits of name (not equal to it; letters compared
// without case: [Operator] is [operator] misspelt), or "".
func resembles(name string, names []string) string {
	for _, n := range names {
		if n != name && distance(strings.ToLower(name), strings.ToLower(n)) <= NearMiss {
			return n
		}
	}
	return ""
}

// distance is the Levenshtein distance of a and b (bytes: section names are ASCII), bounded by NearMiss+1 for
// names whose lengths differ more than that.
func distance(a, b string) int {
	if d := len(a) - len(b); d > NearMiss || -d > NearMiss {
		return NearMiss + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

package cloudsim

import (
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

func sortedValues[T any](m map[string]*T) []*T {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*T, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// neutronTime formats like Neutron: seconds, UTC, with Z.
func neutronTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// noZTime formats like Cinder: microseconds, no zone.
func microNoZ(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// secNoZ formats like Octavia: seconds, no zone.
func secNoZ(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05") }

// reserved query parameters that are never field filters.
var reservedParams = map[string]bool{
	"limit": true, "marker": true, "sort_key": true, "sort_dir": true, "page_reverse": true, "fields": true,
	"tags": true, "tags-any": true, "not-tags": true, "not-tags-any": true, "all_tenants": true,
	"offset": true, "sort": true,
}

// matchFilters reports whether an item passes the query's field filters. field returns an
// item's values of a field and whether the field is known; unknown fields do not filter.
func matchFilters(q url.Values, field func(string) ([]string, bool)) bool {
	for key, want := range q {
		if reservedParams[key] {
			continue
		}
		have, known := field(key)
		if !known {
			continue
		}
		if !anyEqual(have, want) {
			return false
		}
	}
	return matchTags(q, field)
}

func anyEqual(have, want []string) bool {
	for _, h := range have {
		if slices.Contains(want, h) {
			return true
		}
	}
	return false
}

func splitComma(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func matchTags(q url.Values, field func(string) ([]string, bool)) bool {
	tags, _ := field("tags")
	if all := splitComma(q["tags"]); len(all) > 0 {
		for _, t := range all {
			if !slices.Contains(tags, t) {
				return false
			}
		}
	}
	if anyOf := splitComma(q["tags-any"]); len(anyOf) > 0 && !anyEqual(tags, anyOf) {
		return false
	}
	if not := splitComma(q["not-tags"]); len(not) > 0 {
		all := true
		for _, t := range not {
			if !slices.Contains(tags, t) {
				all = false
			}
		}
		if all {
			return false
		}
	}
	if notAny := splitComma(q["not-tags-any"]); len(notAny) > 0 && anyEqual(tags, notAny) {
		return false
	}
	return true
}

func boolStr(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

package openstack

import (
	"fmt"
	"strings"
)

// only fails when opts sets a filter the resource cannot apply: silently ignoring a filter would
// hand a controller more than it asked for.
func (o ListOpts) only(resource string, allowed ...string) error {
	set := map[string]bool{
		"ProjectID":   o.ProjectID != "",
		"Name":        o.Name != "",
		"NetworkID":   o.NetworkID != "",
		"DeviceID":    o.DeviceID != "",
		"DeviceOwner": o.DeviceOwner != "",
		"Tags":        len(o.Tags) > 0,
	}
	for _, a := range allowed {
		delete(set, a)
	}
	for _, f := range []string{"ProjectID", "Name", "NetworkID", "DeviceID", "DeviceOwner", "Tags"} {
		if set[f] {
			return fmt.Errorf("list %s: filter %s is not supported for %s (supported: %s)", resource, f, resource, strings.Join(allowed, ", "))
		}
	}
	if o.PageSize < 0 {
		return fmt.Errorf("list %s: negative page size %d", resource, o.PageSize)
	}
	return nil
}

// describe renders the filters for error messages, e.g. " (project abc, name foo)".
func (o ListOpts) describe() string {
	var parts []string
	if o.ProjectID != "" {
		parts = append(parts, "project "+o.ProjectID)
	}
	if o.Name != "" {
		parts = append(parts, "name "+o.Name)
	}
	if o.NetworkID != "" {
		parts = append(parts, "network "+o.NetworkID)
	}
	if o.DeviceID != "" {
		parts = append(parts, "device "+o.DeviceID)
	}
	if o.DeviceOwner != "" {
		parts = append(parts, "device owner "+o.DeviceOwner)
	}
	if len(o.Tags) > 0 {
		parts = append(parts, "tags "+strings.Join(o.Tags, ","))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

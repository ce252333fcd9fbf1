// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package nodes

import "strings"

// ProviderIDPrefix starts the providerID the OpenStack cloud provider gives a Node, and CAPO a Machine:
// openstack:///<server id> (a region may stand between the slashes: openstack://<region>/<server id>).
const ProviderIDPrefix = "openstack://"

// ServerID is the server a Node's or a Machine's providerID names ("" when it is no OpenStack providerID).
func ServerID(providerID string) string {
	rest, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return ""
	}
	return rest[i+1:]
}

// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package nodes

import "testing"

func TestServerID(t *testing.T) {
	for in, want := range map[string]string{
		"openstack:///6f1c":        "6f1c",
		"openstack://RegionOne/ab": "ab",
		"openstack:///":            "",
		"aws:///eu-west-1a/i-1":    "",
		"":                         "",
		"openstack:6f1c":           "",
	} {
		if got := ServerID(in); got != want {
			t.Errorf("ServerID(%q) = %q, want %q", in, got, want)
		}
	}
}

package openstack

import (
	"testing"
)

func TestOverQuota(t *testing.T) {
	tests := []struct {
		used, limit int
		threshold   float64
		want        string
	}{
		{used: 80, limit: 100, threshold: 0.8, want: ""},
		{used: 81, limit: 100, threshold: 0.8, want: "ports 81/100 (81% > 80%)"},
		{used: 5000, limit: -1, threshold: 0.8, want: ""},
		{used: 0, limit: 0, threshold: 0.8, want: ""},
		{used: 1, limit: 0, threshold: 0.8, want: "ports 1/0"},
		{used: 31, limit: 30, threshold: 1, want: "ports 31/30 (103% > 100%)"},
	}
	for _, tc := range tests {
		if got := overQuota("ports", tc.used, tc.limit, tc.threshold); got != tc.want {
			t.Errorf("overQuota(%d, %d, %v) = %q, want %q", tc.used, tc.limit, tc.threshold, got, tc.want)
		}
	}
}

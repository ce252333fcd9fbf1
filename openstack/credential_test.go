package openstack

import (
	"testing"
	"time"
)

// TestParseKeystoneTime: the layouts Keystone writes password_expires_at in, with or without microseconds and
// zone, all read as UTC; anything else is an error.
func TestParseKeystoneTime(t *testing.T) {
	want := time.Date(2026, 12, 17, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"2026-12-17T06:00:00.000000", want, false},
		{"2026-12-17T06:00:00", want, false},
		{"2026-12-17T06:00:00Z", want, false},
		{"2026-12-17T07:00:00+01:00", want, false},
		{"2026-12-17T06:00:00.250000", want.Add(250 * time.Millisecond), false},
		{"next tuesday", time.Time{}, true},
		{"", time.Time{}, true},
	}
	for _, tc := range tests {
		got, err := parseKeystoneTime(tc.in)
		if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
			t.Errorf("parseKeystoneTime(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

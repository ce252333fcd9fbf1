package flight

import (
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/openstack"
)

// TestStoppedBy: a SHUTOFF server is started only when no user stopped it since it last ran: the newest stop is
// the cloud's own (no user: Nova's power-state sync after a host crash), or it was started after the last stop,
// or never stopped; a user's stop, also after an earlier crash, leaves it off.
func TestStoppedBy(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	act := func(action, user string, min int) openstack.ServerAction {
		return openstack.ServerAction{Action: action, UserID: user, RequestID: "req-" + action, StartTime: t0.Add(time.Duration(min) * time.Minute)}
	}
	tests := []struct {
		name    string
		actions []openstack.ServerAction
		user    bool // a user's stop: left off
	}{
		{"never stopped (created, then off)", []openstack.ServerAction{act("create", "u1", 0)}, false},
		{"stopped by the cloud (no user)", []openstack.ServerAction{act("create", "u1", 0), act("stop", "", 5)}, false},
		{"stopped by a user", []openstack.ServerAction{act("create", "u1", 0), act("stop", "u2", 5)}, true},
		{"a user's stop, a start, then off with no stop", []openstack.ServerAction{act("stop", "u2", 5), act("start", "u2", 6)}, false},
		{"a crash, a start, then a user's stop", []openstack.ServerAction{act("stop", "", 5), act("start", "u2", 6), act("stop", "u2", 7)}, true},
		{"a user's stop, then reboots", []openstack.ServerAction{act("stop", "u2", 5), act("reboot", "u3", 6)}, true},
		{"no log", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			by := stoppedBy(tc.actions)
			if (by != "") != tc.user {
				t.Fatalf("stoppedBy = %q, want a user's stop %v", by, tc.user)
			}
			if tc.user && !strings.Contains(by, "u2") {
				t.Errorf("stoppedBy = %q, want it to name the user", by)
			}
		})
	}
}

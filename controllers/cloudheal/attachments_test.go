package cloudheal

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
)

func TestStaleAttachmentsDetect(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	vols := map[string]openstack.Volume{
		"v-reserved": {ID: "v-reserved", Status: "reserved"}, "v-inuse": {ID: "v-inuse", Status: "in-use"},
		"v-available": {ID: "v-available", Status: "available"}, "v-detaching": {ID: "v-detaching", Status: "detaching"},
	}
	seen := func(id, vol, server string, ago time.Duration, passes int32) v1alpha1.StaleAttachment {
		return v1alpha1.StaleAttachment{AttachmentID: id, VolumeID: vol, ServerID: server, FirstSeen: metav1.NewTime(now.Add(-ago)), Passes: passes}
	}
	tests := []struct {
		name        string
		att         openstack.VolumeAttachment
		servers     []string
		nodes       []string // servers a Node names
		ready       []string // servers a Ready Node names
		prev        []v1alpha1.StaleAttachment
		wantStale   bool
		wantProven  bool
		wantPasses  int32
		wantFirstAt time.Time
	}{
		{name: "server gone, first sighting", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-reserved", ServerID: "s-gone"},
			wantStale: true, wantPasses: 1, wantFirstAt: now},
		{name: "server gone, second sighting past the timeout", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-inuse", ServerID: "s-gone"},
			prev: []v1alpha1.StaleAttachment{seen("a", "v-inuse", "s-gone", 10*time.Minute, 1)}, wantStale: true, wantProven: true, wantPasses: 2,
			wantFirstAt: now.Add(-10 * time.Minute)},
		{name: "server gone, second sighting inside the timeout", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-detaching", ServerID: "s-gone"},
			prev: []v1alpha1.StaleAttachment{seen("a", "v-detaching", "s-gone", 9*time.Minute, 1)}, wantStale: true, wantPasses: 2,
			wantFirstAt: now.Add(-9 * time.Minute)},
		{name: "old proof for another server starts again", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-reserved", ServerID: "s-gone"},
			prev: []v1alpha1.StaleAttachment{seen("a", "v-reserved", "s-other", time.Hour, 2)}, wantStale: true, wantPasses: 1, wantFirstAt: now},
		{name: "server alive", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-inuse", ServerID: "s1"}, servers: []string{"s1"},
			prev: []v1alpha1.StaleAttachment{seen("a", "v-inuse", "s1", time.Hour, 2)}},
		{name: "a Ready Node names the server, though the list missed it", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-inuse", ServerID: "s1"},
			nodes: []string{"s1"}, ready: []string{"s1"}},
		{name: "a NotReady Node names the server", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-inuse", ServerID: "s1"}, nodes: []string{"s1"}},
		{name: "volume available", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-available", ServerID: "s-gone"}},
		{name: "no server named", att: openstack.VolumeAttachment{ID: "a", VolumeID: "v-reserved"}},
	}
	set := func(ids []string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{Settings: Settings{AttachmentTimeout: 10 * time.Minute}, Volumes: vols, Attachments: []openstack.VolumeAttachment{tc.att},
				Servers: set(tc.servers), NodeServers: set(tc.nodes), ReadyServers: set(tc.ready), Prev: &v1alpha1.CloudHealStatus{StaleAttachments: tc.prev}}
			f := StaleAttachments{}.Detect(&pass.Input[*State]{Read: st, Now: now}).(*staleFinding)
			if !tc.wantStale {
				if len(f.stale) != 0 {
					t.Fatalf("stale = %+v, want none", f.stale)
				}
				return
			}
			if len(f.stale) != 1 {
				t.Fatalf("stale = %+v, want one", f.stale)
			}
			s := f.stale[0]
			if s.proven != tc.wantProven || s.rec.Passes != tc.wantPasses || !s.rec.FirstSeen.Time.Equal(tc.wantFirstAt) {
				t.Fatalf("got proven=%v passes=%d firstSeen=%s, want %v %d %s", s.proven, s.rec.Passes, s.rec.FirstSeen.Time, tc.wantProven, tc.wantPasses, tc.wantFirstAt)
			}
			if u := f.Unhealthy(); len(u) != 1 || u[0] != "a" {
				t.Fatalf("unhealthy = %v", u)
			}
		})
	}
}

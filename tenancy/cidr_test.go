package tenancy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

func cluster(ns, name string, created time.Time, router, project string, cidrs ...v1alpha1.CIDR) v1alpha1.VitalsCluster {
	return v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{RouterID: router}, PodCIDRs: cidrs},
		Status:     v1alpha1.ClusterStatus{ProjectID: project},
	}
}

func TestCheckWidth(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		cidrs  []v1alpha1.CIDR
		limits Limits
		want   bool // refused
	}{
		{"a /16", []v1alpha1.CIDR{"10.100.0.0/16"}, Limits{}, false},
		{"the /12 limit", []v1alpha1.CIDR{"10.96.0.0/12"}, Limits{}, false},
		{"a /11", []v1alpha1.CIDR{"10.96.0.0/11"}, Limits{}, true},
		{"everything", []v1alpha1.CIDR{"0.0.0.0/0"}, Limits{}, true},
		{"the second of two", []v1alpha1.CIDR{"10.100.0.0/16", "10.0.0.0/8"}, Limits{}, true},
		{"IPv6 /48", []v1alpha1.CIDR{"fd00:10::/48"}, Limits{}, false},
		{"IPv6 /44", []v1alpha1.CIDR{"fd00:10::/44"}, Limits{}, false},
		{"IPv6 /43", []v1alpha1.CIDR{"fd00::/43"}, Limits{}, true},
		{"IPv6 everything", []v1alpha1.CIDR{"::/0"}, Limits{}, true},
		{"everything without a limit", []v1alpha1.CIDR{"0.0.0.0/0", "::/0"}, Limits{MaxPodPrefix4: NoPodPrefixLimit, MaxPodPrefix6: NoPodPrefixLimit}, false},
		{"IPv6 still limited", []v1alpha1.CIDR{"::/0"}, Limits{MaxPodPrefix4: NoPodPrefixLimit}, true},
		{"a tighter IPv4 limit", []v1alpha1.CIDR{"10.100.0.0/16"}, Limits{MaxPodPrefix4: 20}, true},
		{"a looser IPv6 limit", []v1alpha1.CIDR{"fd00::/40"}, Limits{MaxPodPrefix6: 32}, false},
		{"not a CIDR", []v1alpha1.CIDR{"nope"}, Limits{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster("ns", "c", t0, "r", "", tc.cidrs...)
			err := CheckWidth(&c, tc.limits)
			if (err != nil) != tc.want {
				t.Fatalf("CheckWidth = %v, want refused %v", err, tc.want)
			}
			if err != nil && err.(*Refusal).Reason != ReasonPodCIDRTooWide {
				t.Fatalf("reason %s", err.(*Refusal).Reason)
			}
		})
	}
}

func TestCheckOverlap(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	me := cluster("team-a", "young", t1, "r1", "", "10.100.0.0/16")
	tests := []struct {
		name   string
		others []v1alpha1.VitalsCluster
		want   bool // refused
	}{
		{"alone", nil, false},
		{"itself", []v1alpha1.VitalsCluster{me}, false},
		{"an older cluster of the project on the router", []v1alpha1.VitalsCluster{cluster("team-a", "old", t0, "r1", "p", "10.100.128.0/17")}, true},
		{"an older cluster holding a wider CIDR", []v1alpha1.VitalsCluster{cluster("team-b", "old", t0, "r1", "p", "10.96.0.0/11")}, true},
		{"a younger cluster", []v1alpha1.VitalsCluster{cluster("team-a", "younger", t1.Add(time.Second), "r1", "p", "10.100.0.0/16")}, false},
		{"same age, a name after", []v1alpha1.VitalsCluster{cluster("team-a", "zz", t1, "r1", "p", "10.100.0.0/16")}, false},
		{"same age, a name before", []v1alpha1.VitalsCluster{cluster("team-a", "aa", t1, "r1", "p", "10.100.0.0/16")}, true},
		{"another router", []v1alpha1.VitalsCluster{cluster("team-a", "old", t0, "r2", "p", "10.100.0.0/16")}, false},
		{"no overlap", []v1alpha1.VitalsCluster{cluster("team-a", "old", t0, "r1", "p", "10.101.0.0/16")}, false},
		// A cluster nobody proved to be the project's (a tenant naming someone else's router) never
		// pushes out one that works.
		{"an older unproven cluster", []v1alpha1.VitalsCluster{cluster("mallory", "old", t0, "r1", "", "10.0.0.0/8")}, false},
		{"an older cluster of another project", []v1alpha1.VitalsCluster{cluster("mallory", "old", t0, "r1", "q", "10.0.0.0/8")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOverlap(&me, "p", tc.others)
			if (err != nil) != tc.want {
				t.Fatalf("CheckOverlap = %v, want refused %v", err, tc.want)
			}
			if err != nil && err.(*Refusal).Reason != ReasonPodCIDROverlap {
				t.Fatalf("reason %s", err.(*Refusal).Reason)
			}
		})
	}
	// IPv6 too.
	v6 := cluster("team-a", "young", t1, "r1", "", "fd00:10::/48")
	if err := CheckOverlap(&v6, "p", []v1alpha1.VitalsCluster{cluster("team-a", "old", t0, "r1", "p", "fd00::/16")}); err == nil {
		t.Fatal("IPv6 overlap not refused")
	}
}

package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/health"
)

func TestDesired(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	degraded := failResult(CheckNetlink, "slow")
	degraded.Severity = health.Degraded
	prevTrue := map[corev1.NodeConditionType]corev1.NodeCondition{
		ConditionCNIHealthy: {Type: ConditionCNIHealthy, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
	}
	tests := []struct {
		name       string
		results    []health.Result
		prev       map[corev1.NodeConditionType]corev1.NodeCondition
		status     corev1.ConditionStatus
		reason     string
		message    string
		transition time.Time
	}{
		{"all ok", []health.Result{okResult(CheckNetlink), okResult(CheckCNIConfig)}, nil, corev1.ConditionTrue, "CNIWorking", "netlink answers", t1},
		{"unchanged status keeps its transition time", []health.Result{okResult(CheckNetlink), okResult(CheckCNIConfig)}, prevTrue, corev1.ConditionTrue, "CNIWorking", "", t0},
		{"netlink failing", []health.Result{failResult(CheckNetlink, "list links: EPERM"), okResult(CheckCNIConfig)}, prevTrue, corev1.ConditionFalse, "NetlinkFailing", "netlink: list links: EPERM", t1},
		{"both failing: first reason, both messages", []health.Result{failResult(CheckCNIConfig, "no config"), failResult(CheckNetlink, "timeout")}, nil, corev1.ConditionFalse, "NetlinkFailing", "netlink: timeout; cni-config: no config", t1},
		{"only config failing", []health.Result{okResult(CheckNetlink), failResult(CheckCNIConfig, "no config")}, nil, corev1.ConditionFalse, "CNIConfigInvalid", "cni-config: no config", t1},
		{"pending", []health.Result{okResult(CheckNetlink), {Name: CheckCNIConfig, Status: health.StatusUnknown}}, nil, corev1.ConditionUnknown, "NoResultYet", "waiting for the first result of cni-config", t1},
		{"missing result is pending", []health.Result{okResult(CheckNetlink)}, nil, corev1.ConditionUnknown, "NoResultYet", "cni-config", t1},
		{"failure beats pending", []health.Result{failResult(CheckNetlink, "x")}, nil, corev1.ConditionFalse, "NetlinkFailing", "netlink: x", t1},
		{"degraded results do not fail", []health.Result{degraded, okResult(CheckCNIConfig)}, nil, corev1.ConditionTrue, "CNIWorking", "", t1},
		{"long message truncated", []health.Result{failResult(CheckNetlink, strings.Repeat("e", 2000)), okResult(CheckCNIConfig)}, nil, corev1.ConditionFalse, "NetlinkFailing", "...", t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Desired(DefaultConditionSpecs()[:1], tt.results, tt.prev, t1)
			if len(got) != 1 {
				t.Fatalf("got %d conditions", len(got))
			}
			c := got[0]
			if c.Status != tt.status || c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) ||
				!c.LastTransitionTime.Time.Equal(tt.transition) || !c.LastHeartbeatTime.Time.Equal(t1) || len(c.Message) > maxConditionMessage {
				t.Fatalf("got %+v, want %s/%s message containing %q transition %s", c, tt.status, tt.reason, tt.message, tt.transition)
			}
		})
	}
}

func TestAddFailureError(t *testing.T) {
	e := &AddFailureError{Report: Report{Pod: "a/b", Source: "socket", Error: "boom"}}
	if e.Error() != "CNI ADD failed for pod a/b (from socket): boom" {
		t.Fatal(e.Error())
	}
	var target *AddFailureError
	if !errors.As(error(e), &target) {
		t.Fatal("errors.As")
	}
}

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

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

// patchRecorder is a NodeClient that keeps the conditions of the last status patch.
type patchRecorder struct{ last []corev1.NodeCondition }

func (p *patchRecorder) GetNode(context.Context, string) (*corev1.Node, error) {
	return &corev1.Node{}, nil
}
func (p *patchRecorder) PatchNodeStatus(_ context.Context, _ string, body []byte) error {
	var patch struct {
		Status struct {
			Conditions []corev1.NodeCondition `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		return err
	}
	p.last = patch.Status.Conditions
	return nil
}

// TestConnectivityConditionHold: after a change, PodNetworkConnectivity changes again only once its
// MinChangeInterval (three check intervals) has passed, so a flapping network is not a flood of writes.
func TestConnectivityConditionHold(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	res := &staticResults{}
	rec := &patchRecorder{}
	nc := &NodeConditions{Client: rec, NodeName: "n1", Specs: []ConditionSpec{ConnectivityConditionSpec(ConnectivityOptions{Interval: 10 * time.Second})},
		Results: res.get, Clock: clk, StartGrace: time.Nanosecond, HeartbeatPeriod: time.Hour,
		written: map[corev1.NodeConditionType]corev1.NodeCondition{}, changedAt: map[corev1.NodeConditionType]time.Time{}, startedAt: t0}
	fail := failResult(CheckConnectivityPod, "10.0.0.7:8080: timed out")
	fail.Severity = health.Degraded
	steps := []struct {
		at     time.Duration
		result health.Result
		want   corev1.ConditionStatus
	}{
		{0, okResult(CheckConnectivityPod), corev1.ConditionTrue},
		{time.Second, fail, corev1.ConditionFalse},                                // the first change is written at once
		{2 * time.Second, okResult(CheckConnectivityPod), corev1.ConditionFalse},  // held
		{25 * time.Second, okResult(CheckConnectivityPod), corev1.ConditionFalse}, // still held
		{31 * time.Second, okResult(CheckConnectivityPod), corev1.ConditionTrue},  // 30s after the change
		{32 * time.Second, fail, corev1.ConditionTrue},                            // held again
		{62 * time.Second, fail, corev1.ConditionFalse},
	}
	for _, s := range steps {
		clk.SetTime(t0.Add(s.at))
		res.set(s.result)
		if !nc.sync(context.Background()) {
			t.Fatalf("at %s: sync failed", s.at)
		}
		got := nc.Written()
		if len(got) != 1 || got[0].Status != s.want {
			t.Fatalf("at %s: written %+v, want %s", s.at, got, s.want)
		}
		if len(rec.last) != 1 || rec.last[0].Status != s.want {
			t.Fatalf("at %s: patched %+v, want %s", s.at, rec.last, s.want)
		}
		if s.want == corev1.ConditionFalse && (rec.last[0].Reason != "PodToPodFailing" || rec.last[0].Message != "no pod on another node answers: pod-network-pod: 10.0.0.7:8080: timed out") {
			t.Fatalf("at %s: %+v", s.at, rec.last[0])
		}
	}
}

// TestConnectivityConditionOptional: a connectivity check without targets of a kind is left out of
// the condition, not waited for.
func TestConnectivityConditionOptional(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	spec := []ConditionSpec{ConnectivityConditionSpec(ConnectivityOptions{Interval: 10 * time.Second})}
	tests := []struct {
		name    string
		results []health.Result
		want    corev1.ConditionStatus
	}{
		{"only DNS configured, passing", []health.Result{okResult(CheckConnectivityDNS)}, corev1.ConditionTrue},
		{"no check registered", nil, corev1.ConditionUnknown},
		{"one pending", []health.Result{okResult(CheckConnectivityDNS), {Name: CheckConnectivityPod, Status: health.StatusUnknown}}, corev1.ConditionUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Desired(spec, tt.results, nil, now); got[0].Status != tt.want {
				t.Errorf("got %+v, want %s", got[0], tt.want)
			}
		})
	}
}

package cli

import (
	"testing"

	"github.com/vitalsproject/vitals/openstack"
)

func TestQuotaState(t *testing.T) {
	tests := []struct {
		used, reserved, limit int
		want                  string
	}{
		{used: 5000, limit: -1, want: QuotaUnlimited},
		{used: 79, limit: 100, want: QuotaOK},
		{used: 80, limit: 100, want: QuotaNear},
		{used: 79, reserved: 1, limit: 100, want: QuotaNear},
		{used: 99, limit: 100, want: QuotaNear},
		{used: 100, limit: 100, want: QuotaExhausted},
		{used: 101, limit: 100, want: QuotaExhausted},
		{used: 0, limit: 0, want: QuotaExhausted},
		{used: 0, limit: 1, want: QuotaOK},
	}
	for _, tc := range tests {
		q := openstack.Quota{Resource: "port", Used: tc.used, Reserved: tc.reserved, Limit: tc.limit}
		if got := quotaState(q, 0.8); got != tc.want {
			t.Errorf("quotaState(%d+%d of %d) = %s, want %s", tc.used, tc.reserved, tc.limit, got, tc.want)
		}
	}
}

func TestJudgeQuotas(t *testing.T) {
	qs := func(pairs ...int) []openstack.Quota {
		names := []string{"port", "floatingip", "trunk"}
		var out []openstack.Quota
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, openstack.Quota{Resource: names[i/2], Used: pairs[i], Limit: pairs[i+1]})
		}
		return out
	}
	resources := []string{"port", "floatingip"}
	tests := []struct {
		name                 string
		quotas               []openstack.Quota
		judged               bool
		result, reason, text string
	}{
		{name: "headroom", quotas: qs(10, 100, 1, 50), judged: true, result: "ok", text: "port 10/100, floatingip 1/50"},
		{name: "unlimited", quotas: qs(10, -1, 1, 50), judged: true, result: "ok", text: "port 10/unlimited, floatingip 1/50"},
		{name: "near", quotas: qs(80, 100, 1, 50), judged: true, result: "warning", reason: ReasonQuotaNear, text: "at or above 80%: port 80/100 (80%)"},
		{name: "exhausted", quotas: qs(100, 100, 45, 50), judged: true, result: "failed", reason: ReasonQuotaExhausted,
			text: "exhausted: port 100/100; at or above 80%: floatingip 45/50 (90%)"},
		{name: "exhausted, for information", quotas: qs(100, 100, 1, 50), judged: false, result: "warning", reason: ReasonQuotaExhausted,
			text: "exhausted: port 100/100 (for information)"},
		{name: "a resource not judged is not read", quotas: qs(1, 100, 1, 100, 10, 10), judged: true, result: "ok", text: "port 1/100, floatingip 1/100"},
		{name: "none reported", quotas: nil, judged: true, result: "ok", text: "no quota of port, floatingip reported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := DoctorCheck{Name: "quota-network"}
			judgeQuotas(&ch, tc.quotas, resources, tc.judged, 0.8)
			if ch.Result != tc.result || ch.Reason != tc.reason || ch.Detail != tc.text {
				t.Errorf("got %s %q %q, want %s %q %q", ch.Result, ch.Reason, ch.Detail, tc.result, tc.reason, tc.text)
			}
			if len(tc.quotas) > 0 && len(ch.Quotas) != 2 {
				t.Errorf("quotas %+v: want port and floatingip", ch.Quotas)
			}
		})
	}
}

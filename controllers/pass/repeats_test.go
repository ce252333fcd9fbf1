package pass

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestRepeatsFresh(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	var r repeats
	steps := []struct {
		what string
		key  types.NamespacedName
		msg  string
		at   time.Duration
		drop bool
		want bool
	}{
		{what: "the first failure", key: a, msg: "Aborted ReadFailed: 503", want: true},
		{what: "the same, an interval later", key: a, msg: "Aborted ReadFailed: 503", at: time.Minute, want: false},
		{what: "another cluster's", key: b, msg: "Aborted ReadFailed: 503", at: time.Minute, want: true},
		{what: "a changed error", key: a, msg: "Aborted ReadFailed: 500", at: 2 * time.Minute, want: true},
		{what: "unchanged, just short of the reminder", key: a, msg: "Aborted ReadFailed: 500", at: 2*time.Minute + RepeatLogEvery - time.Second, want: false},
		{what: "unchanged, the reminder", key: a, msg: "Aborted ReadFailed: 500", at: 2*time.Minute + RepeatLogEvery, want: true},
		{what: "after a complete pass", key: a, msg: "Aborted ReadFailed: 500", at: 2*time.Minute + RepeatLogEvery + time.Minute, drop: true, want: true},
	}
	for _, s := range steps {
		if s.drop {
			r.drop(s.key)
		}
		if got := r.fresh(s.key, s.msg, t0.Add(s.at)); got != s.want {
			t.Errorf("%s: fresh = %v, want %v", s.what, got, s.want)
		}
	}
}

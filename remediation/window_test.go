package remediation

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s ...int) []time.Time {
		var out []time.Time
		for _, x := range s {
			out = append(out, t0.Add(time.Duration(x)*time.Second))
		}
		return out
	}
	tests := []struct {
		name  string
		have  []time.Time
		other []time.Time
		limit int
		want  int // length after the merge
		added int
	}{
		{"empty both", nil, nil, 0, 0, 0},
		{"status only (restart)", nil, at(1, 2, 2), 0, 3, 3},
		{"memory only", at(1, 2), nil, 0, 2, 0},
		{"same history", at(1, 2, 2), at(1, 2, 2), 0, 3, 0},
		{"two actions in one second are two", at(2), at(2, 2), 0, 2, 1},
		{"other replica's actions join", at(1), at(1, 5, 6), 0, 3, 2},
		{"at most limit join, newest first", at(1), at(2, 3, 4), 2, 3, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w window
			for _, x := range tc.have {
				w = w.add(x)
			}
			limit := tc.limit
			if limit == 0 {
				limit = 100
			}
			w, added := w.merge(tc.other, limit)
			if tc.limit > 0 && !w[len(w)-1].Equal(tc.other[len(tc.other)-1]) {
				t.Errorf("merge kept %v, want the newest of %v", w, tc.other)
			}
			if len(w) != tc.want || len(added) != tc.added {
				t.Errorf("merge: %d times (%d added), want %d (%d added): %v", len(w), len(added), tc.want, tc.added, w)
			}
			for i := 1; i < len(w); i++ {
				if w[i].Before(w[i-1]) {
					t.Fatalf("not sorted: %v", w)
				}
			}
		})
	}
}

func TestWindowStampRoundsUp(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if got := stamp(t0.Add(300 * time.Millisecond)); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("stamp(12:00:00.3) = %s, want 12:00:01 (an action never leaves its window early)", got)
	}
	if got := stamp(t0); !got.Equal(t0) {
		t.Errorf("stamp(12:00:00) = %s", got)
	}
	var w window
	w = w.add(t0).add(t0.Add(time.Minute))
	if n := w.since(t0); n != 1 {
		t.Errorf("since(t0) = %d, want 1 (an action at the cutoff has left)", n)
	}
	if w = w.prune(t0); len(w) != 1 {
		t.Errorf("prune(t0) left %v", w)
	}
}

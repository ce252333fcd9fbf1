package v1alpha1

import "testing"

func TestMarked(t *testing.T) {
	for _, tc := range []struct {
		value  string
		absent bool
		marked bool
		ok     bool
	}{
		{value: "true", marked: true, ok: true},
		{value: "True", marked: true, ok: true},
		{value: "TRUE", marked: true, ok: true},
		{value: "1", marked: true, ok: true},
		{value: "t", marked: true, ok: true},
		{value: "false", ok: true},
		{value: "False", ok: true},
		{value: "0", ok: true},
		{value: "yes"},
		{value: " true"},
		{value: ""},
		{absent: true},
	} {
		marks := map[string]string{}
		if !tc.absent {
			marks[AnnotationKeep] = tc.value
			if m, ok := ParseMarker(tc.value); m != tc.marked || ok != tc.ok {
				t.Errorf("ParseMarker(%q) = %v, %v; want %v, %v", tc.value, m, ok, tc.marked, tc.ok)
			}
		}
		if got := Marked(marks, AnnotationKeep); got != tc.marked {
			t.Errorf("Marked(%q, absent %v) = %v; want %v", tc.value, tc.absent, got, tc.marked)
		}
	}
}

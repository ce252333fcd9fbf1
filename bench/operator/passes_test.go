package main

import (
	"testing"
	"time"
)

func TestPassWatch(t *testing.T) {
	pw := newPassWatch(time.Second)
	t0 := time.Unix(1000, 0)
	// The operator now: the exact end times of routegc's passes; the code before: flight's ok counter only.
	pw.record("u", parse(t, `vitals_routegc_last_success_timestamp_seconds{vitalscluster="ns/a"} 1000.5
vitals_routegc_last_success_timestamp_seconds{vitalscluster="ns/b"} 1001
vitals_flight_passes_total{vitalscluster="ns/a",result="ok"} 1
vitals_flight_passes_total{vitalscluster="ns/a",result="error"} 4
`), t0)
	pw.record("u", parse(t, `vitals_routegc_last_success_timestamp_seconds{vitalscluster="ns/a"} 1000.5
vitals_routegc_last_success_timestamp_seconds{vitalscluster="ns/b"} 1031
vitals_flight_passes_total{vitalscluster="ns/a",result="ok"} 3
vitals_flight_passes_total{vitalscluster="ns/b",result="ok"} 1
`), t0.Add(30*time.Second))
	if got := pw.tracked(); len(got) != 2 || got[0] != "routegc" || got[1] != "flight" {
		t.Errorf("tracked %v, want routegc and flight (access never seen)", got)
	}
	rg := pw.since("routegc", t0)
	if len(rg["a"]) != 1 || len(rg["b"]) != 2 || rg["b"][1].Sub(rg["b"][0]) != 30*time.Second {
		t.Errorf("routegc passes %v", rg)
	}
	fl := pw.since("flight", t0)
	if len(fl["a"]) != 3 || len(fl["b"]) != 1 || !fl["b"][0].Equal(t0.Add(30*time.Second)) {
		t.Errorf("flight passes %v", fl)
	}
	if n := pw.passedAll(t0); n != 2 {
		t.Errorf("%d clusters passed by every tracked controller, want 2", n)
	}
	if n := pw.passedAll(t0.Add(time.Second)); n != 1 {
		t.Errorf("%d clusters passed by every tracked controller since t0+1s, want 1 (b)", n)
	}
}

package checks

import "testing"

func TestGoroutines(t *testing.T) {
	for _, tc := range []struct {
		count   int
		wantErr string
	}{{10, ""}, {100, ""}, {101, "101 goroutines (max 100)"}} {
		f, err := Goroutines(GoroutinesOptions{Max: 100, Count: func() int { return tc.count }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = run(t, f)
		wantResult(t, err, tc.wantErr)
	}
	f, err := Goroutines(GoroutinesOptions{Max: 100000})
	if err != nil {
		t.Fatal(err)
	}
	detail, err := run(t, f)
	wantResult(t, err, "")
	if detail == "" {
		t.Error("no detail from the real runtime")
	}
	if _, err := Goroutines(GoroutinesOptions{}); err == nil {
		t.Error("max 0 accepted")
	}
}

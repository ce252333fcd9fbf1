package healthcheck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	ok := func(kind, detail string, d time.Duration) Result {
		return Result{Check: Check{Kind: kind}, Detail: detail, Duration: d}
	}
	bad := func(kind, msg string) Result { return Result{Check: Check{Kind: kind}, Err: errors.New(msg)} }
	for _, tc := range []struct {
		name    string
		results []Result
		want    string
	}{
		{"one healthy", []Result{ok("http", "200 127.0.0.1:8080/health", 3100*time.Microsecond)}, "healthy: http 200 127.0.0.1:8080/health 3.1ms"},
		{"slow", []Result{ok("http", "200 x", 1520*time.Millisecond)}, "healthy: http 200 x 1.52s"},
		{"no detail", []Result{ok("tcp", "", 400*time.Microsecond)}, "healthy: tcp 0.4ms"},
		{"one unhealthy", []Result{bad("http", "127.0.0.1:8080: connection refused")}, "unhealthy: http 127.0.0.1:8080: connection refused"},
		{"only failures named", []Result{ok("http", "200 x", time.Millisecond), bad("port", "p"), bad("file", "f")}, "unhealthy: port p; file f"},
		{"several healthy", []Result{ok("http", "200 x", time.Millisecond), ok("process", "pid 1", 2*time.Millisecond)}, "healthy: http 200 x 1.0ms; process pid 1 2.0ms"},
		{"newlines squeezed", []Result{bad("exec", "line1\nline2\r\tend")}, "unhealthy: exec line1 line2  end"},
		{"control characters", []Result{bad("exec", "a\x00b\x1bc")}, "unhealthy: exec a?b?c"},
		{"invalid UTF-8", []Result{bad("exec", "a\xffb")}, "unhealthy: exec a?b"},
		{"nothing", nil, "unhealthy: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.results); got != tc.want {
				t.Errorf("Line = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineFitsDocker(t *testing.T) {
	for _, msg := range []string{strings.Repeat("x", 10000), strings.Repeat("é", 5000), strings.Repeat("x", 4090) + "€€€"} {
		line := Line([]Result{{Check: Check{Kind: "exec"}, Err: errors.New(msg)}})
		if len(line)+1 > MaxLine || !utf8.ValidString(line) || !strings.HasSuffix(line, "...") {
			t.Errorf("line of %d bytes (valid UTF-8 %v) ending %q", len(line), utf8.ValidString(line), line[len(line)-8:])
		}
	}
	if l := InvalidLine(errors.New(strings.Repeat("y", 9000))); len(l)+1 > MaxLine {
		t.Errorf("invalid line of %d bytes", len(l))
	}
}

func TestRunConcurrentInOrderAndPanicsFail(t *testing.T) {
	cs := []Check{
		{Kind: "a", Run: func(ctx context.Context) error { time.Sleep(20 * time.Millisecond); return nil }},
		{Kind: "b", Run: func(ctx context.Context) error { panic("boom") }},
		{Kind: "c", Run: func(ctx context.Context) error { return errors.New("c failed") }},
	}
	rs := Run(context.Background(), cs, time.Now)
	if len(rs) != 3 || rs[0].Check.Kind != "a" || rs[0].Err != nil || rs[1].Check.Kind != "b" || rs[2].Check.Kind != "c" {
		t.Fatalf("results %+v", rs)
	}
	if rs[1].Err == nil || !strings.Contains(rs[1].Err.Error(), "check panicked: boom") {
		t.Errorf("panic result %v", rs[1].Err)
	}
	if Healthy(rs) {
		t.Error("healthy with failures")
	}
	if got := Line(rs); got != "unhealthy: b check panicked: boom; c c failed" {
		t.Errorf("line %q", got)
	}
	if Healthy(nil) {
		t.Error("no checks is not healthy")
	}
}

package healthcheck

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vitalsproject/vitals/health/checks"
)

// MaxLine is the most bytes of output, newline included: what Docker keeps of a health check's
// output.
const MaxLine = 4096

// Result is the outcome of one check.
type Result struct {
	Check    Check
	Err      error
	Detail   string // what a passing check saw
	Duration time.Duration
}

// Run runs the checks at once (concurrently when there are several), each bounded by its timeout,
// and returns their results in order. now measures durations (time.Now in the command).
func Run(ctx context.Context, cs []Check, now func() time.Time) []Result {
	results := make([]Result, len(cs))
	one := func(i int) {
		var o checks.Observation
		start := now()
		cctx := ctx
		if cs[i].Timeout > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, cs[i].Timeout)
			defer cancel()
		}
		err := safeRun(checks.WithObservation(cctx, &o), cs[i].Run)
		results[i] = Result{Check: cs[i], Err: err, Detail: o.Detail, Duration: now().Sub(start)}
	}
	if len(cs) == 1 {
		one(0)
		return results
	}
	var wg sync.WaitGroup
	for i := range cs {
		wg.Go(func() { one(i) })
	}
	wg.Wait()
	return results
}

// safeRun turns a panicking check into a failure.
func safeRun(ctx context.Context, f checks.Func) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("check panicked: %v", r)
		}
	}()
	return f(ctx)
}

// Healthy reports whether every result passed.
func Healthy(rs []Result) bool {
	for _, r := range rs {
		if r.Err != nil {
			return false
		}
	}
	return len(rs) > 0
}

// Line is the one line printed for the results, without the newline: "healthy: http 200
// 127.0.0.1:8080/health 3.1ms" or "unhealthy: http 127.0.0.1:8080/health: connection refused".
// When unhealthy, only the failing checks are named. Several checks are joined by "; ".
func Line(rs []Result) string {
	healthy := Healthy(rs)
	var parts []string
	for _, r := range rs {
		switch {
		case healthy:
			p := r.Check.Kind
			if r.Detail != "" {
				p += " " + r.Detail
			}
			parts = append(parts, p+" "+formatDuration(r.Duration))
		case r.Err != nil:
			parts = append(parts, r.Check.Kind+" "+r.Err.Error())
		}
	}
	prefix := "healthy: "
	if !healthy {
		prefix = "unhealthy: "
	}
	return clip(prefix + strings.Join(parts, "; "))
}

// InvalidLine is the line for arguments or a config that cannot be parsed.
func InvalidLine(err error) string { return clip("unhealthy: invalid check: " + err.Error()) }

// clip makes s a single valid UTF-8 line that fits MaxLine with its newline.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	const max = MaxLine - 1
	if len(s) <= max {
		return s
	}
	cut := max - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// formatDuration prints "0.4ms", "3.1ms" or "1.52s".
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/health"
)

// TestFailureBudgetSemantics drives the agent's CNI ADD budget, as the options configure it, through
// sequences of reports and checks when liveness fails.
func TestFailureBudgetSemantics(t *testing.T) {
	type step struct {
		after  time.Duration // clock advance before the report
		report Outcome       // "" means only advance the clock
		count  int
		// tripped: the budget fails liveness after this step.
		tripped bool
	}
	f := func(tripped bool) step { return step{report: Failure, tripped: tripped} }
	s := func(tripped bool) step { return step{report: Success, tripped: tripped} }
	tests := []struct {
		name  string
		mode  string
		count int // cni_failures_count
		win   time.Duration
		steps []step
	}{
		{"kuryr default: three failures tolerated, the fourth trips", ModeConsecutive, 3, 0,
			[]step{f(false), f(false), f(false), f(true), f(true)}},
		{"a success resets the consecutive count", ModeConsecutive, 3, 0,
			[]step{f(false), f(false), f(false), s(false), f(false), f(false), f(false), f(true)}},
		{"a success after tripping recovers", ModeConsecutive, 3, 0,
			[]step{f(false), f(false), f(false), f(true), s(false)}},
		{"failures spread over a month never trip with resets", ModeConsecutive, 3, 0,
			[]step{f(false), {after: 240 * time.Hour, report: Success}, f(false), {after: 240 * time.Hour, report: Success}, f(false), f(false), f(false)}},
		{"cni_failures_count 0: the first failure trips", ModeConsecutive, 0, 0,
			[]step{f(true), s(false)}},
		{"one report standing for several occurrences", ModeConsecutive, 3, 0,
			[]step{{report: Failure, count: 2}, {report: Failure, count: 2, tripped: true}}},
		{"window: four failures within ten minutes trip", ModeWindow, 3, 10 * time.Minute,
			[]step{f(false), {after: time.Minute, report: Failure}, {after: time.Minute, report: Failure}, {after: time.Minute, report: Failure, tripped: true}}},
		{"window: a success does not reset", ModeWindow, 3, 10 * time.Minute,
			[]step{f(false), f(false), f(false), s(false), {report: Failure, tripped: true}}},
		{"window: old failures leave the window", ModeWindow, 3, 10 * time.Minute,
			[]step{f(false), f(false), f(false), f(true), {after: 11 * time.Minute, tripped: false}, f(false)}},
		{"window: failures spread over a month never trip", ModeWindow, 3, 10 * time.Minute,
			[]step{f(false), {after: 168 * time.Hour, report: Failure}, {after: 168 * time.Hour, report: Failure}, {after: 168 * time.Hour, report: Failure}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
			m := health.NewManager(health.WithClock(clk))
			opts := DefaultOptions()
			opts.NodeName, opts.WatchEvents, opts.NodeConditions = "n", false, false
			opts.FailuresCount, opts.FailureMode, opts.FailureWindow = tt.count, tt.mode, tt.win
			b, err := m.Budget(BudgetCNIAdd, budgetOptions(opts))
			if err != nil {
				t.Fatal(err)
			}
			rep := &BudgetReporter{Budget: b}
			for i, st := range tt.steps {
				clk.Step(st.after)
				if st.report != "" {
					r := Report{Op: OpAdd, Result: st.report, Pod: "default/p", Error: "boom", Count: st.count}
					if err := rep.Report(context.Background(), r); err != nil {
						t.Fatal(err)
					}
				}
				r := m.Evaluate(health.Liveness)
				if got := !r.Healthy; got != st.tripped {
					t.Fatalf("step %d (%+v): tripped = %v, want %v (count %d)", i, st, got, st.tripped, b.Count())
				}
				if st.tripped {
					res, _ := m.Result(BudgetCNIAdd)
					if !errors.Is(res.Err, health.ErrBudgetExhausted) || !strings.Contains(res.Err.Error(), "CNI ADD failed for pod default/p: boom") {
						t.Fatalf("step %d: reason %v", i, res.Err)
					}
				}
			}
		})
	}
}

func TestBudgetReporterIgnoresDelForBudget(t *testing.T) {
	b := &tally{}
	rep := &BudgetReporter{Budget: b}
	for _, r := range []Report{
		{Op: OpDel, Result: Failure},
		{Op: OpCheck, Result: Failure},
		{Op: OpDel, Result: Success},
	} {
		if err := rep.Report(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if f, s, _, _ := b.snapshot(); f != 0 || s != 0 {
		t.Fatalf("DEL/CHECK reached the budget: %d failures, %d successes", f, s)
	}
	if err := rep.Report(context.Background(), Report{Op: "ADD", Result: "maybe"}); err == nil {
		t.Fatal("invalid result accepted")
	}
}

package agent

import (
	"context"
	"sync"
)

// BudgetReporter is the Reporter at the end of every source: a failed ADD spends the failure budget
// (once per occurrence), a successful ADD resets a consecutive budget. DEL and CHECK results are only
// counted. It is safe for concurrent use.
type BudgetReporter struct {
	// Budget receives ADD results (a *health.Budget).
	Budget FailureCounter
	// OnFailure, when set, is called for every failed ADD after the budget is spent (for example to
	// record an Event on the Node). It must not block.
	OnFailure func(Report)
	// OnReport, when set, is called for every accepted report (metrics).
	OnReport func(Report)
	// Source is put in reports that do not name one.
	Source string

	mu     sync.Mutex
	counts map[countKey]int
}

type countKey struct {
	Op     Op
	Result Outcome
}

// Report validates r and feeds it to the budget.
func (b *BudgetReporter) Report(ctx context.Context, r Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	r = r.Normalize()
	if r.Source == "" {
		r.Source = b.Source
	}
	b.mu.Lock()
	if b.counts == nil {
		b.counts = map[countKey]int{}
	}
	b.counts[countKey{r.Op, r.Result}] += r.Count
	b.mu.Unlock()
	if r.Op == OpAdd && b.Budget != nil {
		if r.Result == Failure {
			err := &AddFailureError{Report: r}
			for range r.Count {
				b.Budget.Failure(err)
			}
		} else {
			b.Budget.Success()
		}
	}
	if b.OnReport != nil {
		b.OnReport(r)
	}
	if r.Op == OpAdd && r.Result == Failure && b.OnFailure != nil {
		b.OnFailure(r)
	}
	return nil
}

// Count returns how many occurrences of op with result were reported.
func (b *BudgetReporter) Count(op Op, result Outcome) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts[countKey{op, result}]
}

package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/vitalsproject/vitals/cnireport"
)

// The report types are the socket protocol's, declared once in the stdlib-only package cnireport that
// CNI plugins import; these names keep the agent's Go API in one package.
type (
	// Op is a CNI operation.
	Op = cnireport.Op
	// Outcome is the result of one CNI operation.
	Outcome = cnireport.Outcome
	// Report is one CNI operation's result.
	Report = cnireport.Report
	// Response is the socket server's answer to one report line.
	Response = cnireport.Response
)

// CNI operations and outcomes a report may carry.
const (
	OpAdd   = cnireport.OpAdd
	OpDel   = cnireport.OpDel
	OpCheck = cnireport.OpCheck
	Success = cnireport.Success
	Failure = cnireport.Failure
)

// DefaultSocketPath is where the agent listens for CNI reports.
const DefaultSocketPath = cnireport.DefaultSocketPath

// Reporter receives CNI operation results. A daemon that embeds the health library reports through
// it; the agent's socket server and Events source do too. Report must not block for long.
type Reporter interface {
	Report(ctx context.Context, r Report) error
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(ctx context.Context, r Report) error

// Report calls f.
func (f ReporterFunc) Report(ctx context.Context, r Report) error { return f(ctx, r) }

// FailureCounter is what a report feeds: a health.Budget satisfies it.
type FailureCounter interface {
	Failure(err error)
	Success()
}

// AddFailureError is the error a failed CNI ADD puts in the failure budget.
type AddFailureError struct {
	Report Report
}

func (e *AddFailureError) Error() string {
	var b strings.Builder
	b.WriteString("CNI ADD failed")
	if e.Report.Pod != "" {
		fmt.Fprintf(&b, " for pod %s", e.Report.Pod)
	}
	if e.Report.Source != "" {
		fmt.Fprintf(&b, " (from %s)", e.Report.Source)
	}
	if e.Report.Error != "" {
		b.WriteString(": ")
		b.WriteString(e.Report.Error)
	}
	return b.String()
}

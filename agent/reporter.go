package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Op is a CNI operation.
type Op string

// CNI operations a report may carry.
const (
	OpAdd   Op = "ADD"
	OpDel   Op = "DEL"
	OpCheck Op = "CHECK"
)

// Outcome is the result of one CNI operation.
type Outcome string

// Outcomes a report may carry.
const (
	Success Outcome = "success"
	Failure Outcome = "failure"
)

// Report is one CNI operation's result. It is also the JSON line of the socket protocol:
//
//	{"op":"ADD","result":"failure","pod":"ns/name","error":"..."}
type Report struct {
	Op     Op      `json:"op"`
	Result Outcome `json:"result"`
	// Pod is "namespace/name"; optional.
	Pod string `json:"pod,omitempty"`
	// Error says why the operation failed; optional.
	Error string `json:"error,omitempty"`
	// ContainerID of the sandbox; optional.
	ContainerID string `json:"containerID,omitempty"`
	// Source names where the report came from ("socket", "kube-events", "api"); set by the agent.
	Source string `json:"source,omitempty"`
	// Count is how many occurrences the report stands for (a kubelet Event seen N more times); 0 means 1.
	Count int `json:"count,omitempty"`
	// Time of the operation; zero means when it was received.
	Time time.Time `json:"time,omitzero"`
}

// Validate checks a report as received from outside.
func (r Report) Validate() error {
	var problems []string
	switch Op(strings.ToUpper(string(r.Op))) {
	case OpAdd, OpDel, OpCheck:
	case "":
		problems = append(problems, `op: missing (expected "ADD", "DEL" or "CHECK")`)
	default:
		problems = append(problems, fmt.Sprintf(`op: %q (expected "ADD", "DEL" or "CHECK")`, r.Op))
	}
	switch Outcome(strings.ToLower(string(r.Result))) {
	case Success, Failure:
	case "":
		problems = append(problems, `result: missing (expected "success" or "failure")`)
	default:
		problems = append(problems, fmt.Sprintf(`result: %q (expected "success" or "failure")`, r.Result))
	}
	if r.Pod != "" {
		ns, name, ok := strings.Cut(r.Pod, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			problems = append(problems, fmt.Sprintf(`pod: %q (expected "namespace/name")`, r.Pod))
		}
	}
	if r.Count < 0 {
		problems = append(problems, fmt.Sprintf("count: %d (expected 0 or more)", r.Count))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// normalize upper-cases Op and lower-cases Result.
func (r Report) normalize() Report {
	r.Op = Op(strings.ToUpper(string(r.Op)))
	r.Result = Outcome(strings.ToLower(string(r.Result)))
	if r.Count <= 0 {
		r.Count = 1
	}
	return r
}

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

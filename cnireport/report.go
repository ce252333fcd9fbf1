package cnireport

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultSocketPath is where the node agent listens for reports.
const DefaultSocketPath = "/run/vitals/cni.sock"

// MaxLine is the longest report line the agent accepts, newline included.
const MaxLine = 64 << 10

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

// Report is one CNI operation's result, and the JSON line of the protocol:
//
//	{"op":"ADD","result":"failure","pod":"ns/name","error":"..."}
//
// Unknown fields are ignored by the agent, so that newer clients work with older agents.
type Report struct {
	Op     Op      `json:"op"`
	Result Outcome `json:"result"`
	// Pod is "namespace/name"; optional.
	Pod string `json:"pod,omitempty"`
	// Error says why the operation failed; optional.
	Error string `json:"error,omitempty"`
	// ContainerID of the sandbox; optional.
	ContainerID string `json:"containerID,omitempty"`
	// Source names where the report came from ("socket", "kube-events", "api"). The receiver sets it:
	// a value sent by a client is replaced.
	Source string `json:"source,omitempty"`
	// Count is how many occurrences the report stands for; 0 means 1. The agent takes at most
	// MaxCount from one report.
	Count int `json:"count,omitempty"`
	// Time of the operation; zero means when it was received.
	Time time.Time `json:"time,omitzero"`
}

// MaxCount is the most occurrences one report stands for: a larger Count is taken as MaxCount, so that
// one line cannot make the receiver loop for long. It is above any failure budget worth setting.
const MaxCount = 1000

// Response is the line the agent writes back for each report line.
type Response struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
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

// Normalize upper-cases Op, lower-cases Result and bounds Count to 1..MaxCount.
func (r Report) Normalize() Report {
	r.Op = Op(strings.ToUpper(string(r.Op)))
	r.Result = Outcome(strings.ToLower(string(r.Result)))
	r.Count = min(max(r.Count, 1), MaxCount)
	return r
}

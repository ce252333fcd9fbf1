package cloudsim

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Request is one line of the request log (Options.RequestLog): an API call as the simulator received it.
type Request struct {
	// Time the call arrived, before any latency (knob or fault), on the simulator's clock.
	Time    time.Time `json:"time"`
	Service string    `json:"service"`
	Method  string    `json:"method"`
	Path    string    `json:"path"`
	Query   string    `json:"query,omitempty"`
	// Status answered (0: the client went away first).
	Status int `json:"status"`
	// Project of the caller's token, also for a call a fault answered before the token was checked ("" for
	// calls without a valid one).
	Project string `json:"project,omitempty"`
	// UserAgent of the call: the operator names its replica there.
	UserAgent string `json:"userAgent,omitempty"`
	// Fault that changed the call, by ID ("" when none).
	Fault string `json:"fault,omitempty"`
}

// requestLog writes one JSON line per call, in the order the calls ended.
type requestLog struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newRequestLog(w io.Writer) *requestLog {
	if w == nil {
		return nil
	}
	return &requestLog{enc: json.NewEncoder(w)}
}

func (l *requestLog) write(r *Request) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.enc.Encode(r) // a log that cannot be written loses lines, never calls
}

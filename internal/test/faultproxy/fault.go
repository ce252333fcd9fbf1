package faultproxy

import (
	"fmt"
	"net/http"
	"time"
)

// Kind names what a Fault does.
type Kind string

// The kinds of faults.
const (
	KindPass     Kind = "pass"     // forward unchanged (a step of a Sequence that lets the request through)
	KindDelay    Kind = "delay"    // wait, then forward
	KindStatus   Kind = "status"   // answer with an error status and body instead of the upstream's answer
	KindReset    Kind = "reset"    // reset the client's TCP connection (RST), no answer
	KindTimeout  Kind = "timeout"  // hold the request until the client gives up (or Hold passes), no answer
	KindTruncate Kind = "truncate" // forward, but cut the response body short and abort the connection
	KindReorder  Kind = "reorder"  // forward, reversing the first list in the JSON response (a page in another order)
)

// Fault says what to do with a request a rule selected. Build one with the constructors (Status, Reset, ...).
type Fault struct {
	Kind Kind

	// Delay is waited before the fault acts, for every kind (for KindDelay it is the whole fault).
	Delay time.Duration

	// KindStatus: the HTTP status, the shape of the error body, its message, and an optional type (Neutron's
	// "type", Nova's key, Keystone's title, Kubernetes' reason) instead of the one derived from the status.
	// Body, when set, is sent as is instead. Header is added to the response (e.g. Retry-After).
	Status  int
	Style   Style
	Message string
	Type    string
	Body    []byte
	Header  http.Header

	// AfterUpstream (KindStatus, KindReset, KindTimeout): forward the request first and fail only the answer,
	// so that the upstream service did act (a create that succeeded although the client saw an error, a
	// delete whose client died before it heard the answer).
	AfterUpstream bool

	// Hold (KindTimeout): how long to hold before closing the connection without an answer; 0 = until the
	// client gives up or the proxy closes.
	Hold time.Duration

	// Bytes (KindTruncate): how many bytes of the body to send; 0 = half of it.
	Bytes int
}

// Pass lets a request through unchanged (a step in a Sequence).
func Pass() Fault { return Fault{Kind: KindPass} }

// Delay forwards the request after d.
func Delay(d time.Duration) Fault { return Fault{Kind: KindDelay, Delay: d} }

// Status answers with the HTTP status code and an error body of the given style carrying message.
func Status(code int, style Style, message string) Fault {
	return Fault{Kind: KindStatus, Status: code, Style: style, Message: message}
}

// Reset resets the client's connection (TCP RST) without forwarding the request.
func Reset() Fault { return Fault{Kind: KindReset} }

// ResetAfterUpstream forwards the request, discards the answer and resets the client's connection.
func ResetAfterUpstream() Fault { return Fault{Kind: KindReset, AfterUpstream: true} }

// Timeout holds the request without an answer until the client gives up; with hold > 0, the connection is
// closed without an answer after hold.
func Timeout(hold time.Duration) Fault { return Fault{Kind: KindTimeout, Hold: hold} }

// TimeoutAfterUpstream forwards the request, discards the answer and then holds the client as Timeout does:
// the upstream acted, the client never hears of it.
func TimeoutAfterUpstream(hold time.Duration) Fault {
	return Fault{Kind: KindTimeout, Hold: hold, AfterUpstream: true}
}

// Truncate forwards the request and sends only the first n bytes of the response body (n = 0: half), keeping
// the original Content-Length, then aborts the connection: the client sees an unexpected EOF.
func Truncate(n int) Fault { return Fault{Kind: KindTruncate, Bytes: n} }

// Reorder forwards the request and reverses the first array of the JSON response object (Neutron's
// "networks", Nova's "servers", Kubernetes' "items"): the same page, in another order.
func Reorder() Fault { return Fault{Kind: KindReorder} }

// WithDelay returns f waiting d before it acts.
func (f Fault) WithDelay(d time.Duration) Fault { f.Delay = d; return f }

// WithHeader returns f adding the header to its response (KindStatus).
func (f Fault) WithHeader(key, value string) Fault {
	h := f.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	f.Header = h
	return f
}

func (f Fault) validate() error {
	switch f.Kind {
	case KindPass, KindDelay, KindReset, KindTimeout, KindReorder:
	case KindStatus:
		if f.Status < 100 || f.Status > 999 {
			return fmt.Errorf("status fault: status %d is not an HTTP status", f.Status)
		}
	case KindTruncate:
		if f.Bytes < 0 {
			return fmt.Errorf("truncate fault: negative byte count %d", f.Bytes)
		}
	default:
		return fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if f.Delay < 0 || f.Hold < 0 {
		return fmt.Errorf("%s fault: negative duration", f.Kind)
	}
	return nil
}

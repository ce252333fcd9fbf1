package openstack

// The one classifier of cloud errors. What a cloud answers (its URLs, its response bodies, the user and
// region a tenant's Secret names) is a tenant's text: it must reach no condition, Event, metric label or
// log line. Every error of a gophercloud call passes Classify where it enters this package, so that every
// message built above it (fmt.Errorf("...: %w", err), err.Error()) holds only a class and a status code.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// Class is what kind of failure a cloud error is, for messages and metric labels.
type Class string

// The classes of cloud errors.
const (
	ClassHTTP             Class = "http"         // an answer with an HTTP status of 400 or more (see Code)
	ClassReauthentication Class = "reauth"       // re-authentication inside a request failed
	ClassUnreachable      Class = "unreachable"  // no connection, no answer, a DNS failure
	ClassCertificate      Class = "certificate"  // the TLS certificate does not verify
	ClassTimeout          Class = "timeout"      // the deadline passed
	ClassCanceled         Class = "canceled"     // the context was canceled
	ClassTooLarge         Class = "too_large"    // the answer was larger than the bound
	ClassUndecodable      Class = "undecodable"  // the answer was no JSON of the expected shape
	ClassCatalog          Class = "catalog"      // a service or endpoint missing from the catalog
	ClassUnclassified     Class = "unclassified" // any other error of the client library
)

// Error is a classified cloud error: its message is the class and the status code only. Unwrap gives the
// original error, so that IsNotFound, IsConflict and errors.Is keep working; no message of this project
// may print anything it finds there.
type Error struct {
	Class Class
	// Code is the HTTP status of the answer (of Keystone's, for ClassReauthentication); 0 when none.
	Code int
	err  error
}

func (e *Error) Error() string {
	switch e.Class {
	case ClassHTTP:
		return fmt.Sprintf("the cloud answered HTTP %d (%s)", e.Code, httpText(e.Code))
	case ClassReauthentication:
		if e.Code != 0 {
			return fmt.Sprintf("re-authentication failed: Keystone answered HTTP %d (%s)", e.Code, httpText(e.Code))
		}
		return "re-authentication failed: Keystone could not be asked"
	case ClassUnreachable:
		return "the cloud cannot be reached"
	case ClassCertificate:
		return "the cloud's TLS certificate is not trusted"
	case ClassTimeout:
		return "the request timed out"
	case ClassCanceled:
		return "the request was canceled"
	case ClassTooLarge:
		return "the cloud's answer is larger than the operator reads"
	case ClassUndecodable:
		return "the cloud's answer could not be decoded"
	case ClassCatalog:
		return "the service is not in the catalog"
	}
	return "the request failed (unclassified error)"
}

// Unwrap returns the original error (and ErrWrongCredentials for a re-authentication Keystone refused).
func (e *Error) Unwrap() []error {
	if e.Class == ClassReauthentication && e.Code == http.StatusUnauthorized {
		return []error{e.err, ErrWrongCredentials}
	}
	return []error{e.err}
}

// Is makes errors.Is(err, context.DeadlineExceeded) and (context.Canceled) hold for their classes.
func (e *Error) Is(target error) bool {
	return (target == context.DeadlineExceeded && e.Class == ClassTimeout) || //nolint:errorlint // sentinel identity
		(target == context.Canceled && e.Class == ClassCanceled) || //nolint:errorlint // sentinel identity
		(target == ErrUnreachable && e.Class == ClassUnreachable) || //nolint:errorlint // sentinel identity
		(target == ErrUntrustedCertificate && e.Class == ClassCertificate) //nolint:errorlint // sentinel identity
}

func httpText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "unknown status"
}

// Classify returns err as an *Error (nil for nil; an *Error as it is). Every error a cloud call returns
// passes it before it is wrapped with what was being done.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrServiceUnavailable) {
		return err // Client's own message: the service and the credentials' source, nothing the cloud said
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err // classified already, and wrapped by this project's text only
	}
	return &Error{Class: classOf(err), Code: codeOf(err), err: err}
}

// Describe is the safe message of any error that may hold a cloud's answer: Classify(err).Error().
func Describe(err error) string {
	if err == nil {
		return ""
	}
	return Classify(err).Error()
}

// ClassOf is the class and the status code of err, for metric labels and log keys.
func ClassOf(err error) (Class, int) {
	if err == nil {
		return "", 0
	}
	var ce *Error
	if errors.As(Classify(err), &ce) {
		return ce.Class, ce.Code
	}
	return ClassUnclassified, 0
}

func classOf(err error) Class {
	var reauth gophercloud.ErrUnableToReauthenticate
	var reauthp *gophercloud.ErrUnableToReauthenticate
	var code gophercloud.ErrUnexpectedResponseCode
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var nf gophercloud.ErrServiceNotFound
	var ef gophercloud.ErrEndpointNotFound
	switch {
	case errors.As(err, &reauth), errors.As(err, &reauthp):
		return ClassReauthentication
	case errors.As(err, &code):
		return ClassHTTP
	case errors.Is(err, bounded.ErrTooLarge):
		return ClassTooLarge
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		return ClassCanceled
	case isCertificateError(err):
		return ClassCertificate
	case isUnreachable(err):
		return ClassUnreachable
	case errors.As(err, &syntax), errors.As(err, &typ):
		return ClassUndecodable
	case errors.Is(err, ErrServiceUnavailable), errors.As(err, &nf), errors.As(err, &ef):
		return ClassCatalog
	}
	return ClassUnclassified
}

// codeOf is the status code of err's answer: for a failed re-authentication, Keystone's.
func codeOf(err error) int {
	var reauth gophercloud.ErrUnableToReauthenticate
	var reauthp *gophercloud.ErrUnableToReauthenticate
	switch {
	case errors.As(err, &reauthp):
		return statusOf(reauthp.ErrReauth)
	case errors.As(err, &reauth):
		return statusOf(reauth.ErrReauth)
	}
	return statusOf(err)
}

func statusOf(err error) int {
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		return code.Actual
	}
	return 0
}

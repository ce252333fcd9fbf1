package remediation

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/vitalsproject/vitals/fencing"
)

// Unreachable says whether a failed write's err shows its API unreachable: the connection refused, reset or
// cut, no answer in time, a name that does not resolve, or a gateway in front answering that nothing is
// behind it (502, 503, 504). The answer of an API that is up (a conflict, a refusal, a 500 of a bug, a fence's
// refusal) is not, and neither is a write the replica's own fenced validity cut short (fencing.CutByValidity:
// its lease was about to end, which says nothing of the API). A write of an allowed action failing so is an
// outage the pass saw itself (Pass.Done).
func Unreachable(err error) bool {
	if err == nil || fencing.CutByValidity(err) {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.As(err, &oe), errors.As(err, &de), errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case utilnet.IsConnectionReset(err), utilnet.IsConnectionRefused(err), utilnet.IsProbableEOF(err), utilnet.IsHTTP2ConnectionLost(err):
		return true
	}
	code := 0
	var st apierrors.APIStatus
	var gc interface{ GetStatusCode() int } // gophercloud's ErrUnexpectedResponseCode
	switch {
	case errors.As(err, &st):
		code = int(st.Status().Code)
	case errors.As(err, &gc):
		code = gc.GetStatusCode()
	}
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

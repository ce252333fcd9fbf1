package workload

import (
	"errors"
	"fmt"
)

// Reasons of the WorkloadReachable condition, carried by *Error.
const (
	// ReasonReachable: the API answers and the informers have synced (the condition is True).
	ReasonReachable = "Reachable"
	// ReasonConnecting: the access is built and its first probe has not answered yet.
	ReasonConnecting = "Connecting"
	// ReasonUnreachable: the API did not answer the probe, or answered that it is not ready.
	ReasonUnreachable = "Unreachable"
	// ReasonUnauthorized: the API refused the kubeconfig's credentials.
	ReasonUnauthorized = "Unauthorized"
	// ReasonNotSynced: an informer has not synced yet.
	ReasonNotSynced = "NotSynced"
	// ReasonLocalNotAllowed: no kubeconfigSecretRef, and the operator does not serve its own cluster.
	ReasonLocalNotAllowed = "LocalNotAllowed"
	// ReasonMissingKubeconfig: the Secret, or its key, does not exist.
	ReasonMissingKubeconfig = "MissingKubeconfig"
	// ReasonInvalidKubeconfig: the kubeconfig does not parse or is incomplete.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	// ReasonRefusedKubeconfig: the kubeconfig asks for something a tenant's kubeconfig may not do
	// (credential plugins, files, proxies, no TLS verification).
	ReasonRefusedKubeconfig = "RefusedKubeconfig"
	// ReasonStopped: the access was stopped (the VitalsCluster is gone or the operator stops).
	ReasonStopped = "Stopped"
)

// Error says why a workload cluster cannot be used. Reason is CamelCase for the WorkloadReachable
// condition and Events; Message never holds the Secret's contents (no server address, no names from the
// kubeconfig, no credentials): it names fields by their position, e.g. "users[0]: exec ...".
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Reason, e.Message) }

// NotAnOutage implements remediation.NotAnOutage: a workload cluster not configured yet (no kubeconfig,
// one the operator refuses or cannot parse, a loopback one not allowed) or an access stopped on purpose
// is not an outage of the cluster; its API unreachable, refusing the operator's credentials or not
// keeping its informers in sync is.
func (e *Error) NotAnOutage() bool {
	switch e.Reason {
	case ReasonLocalNotAllowed, ReasonMissingKubeconfig, ReasonInvalidKubeconfig, ReasonRefusedKubeconfig, ReasonStopped:
		return true
	}
	return false
}

func errorf(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the Reason of an *Error in err's chain, ReasonReachable for nil, and
// ReasonUnreachable for any other error.
func ReasonOf(err error) string {
	if err == nil {
		return ReasonReachable
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonUnreachable
}

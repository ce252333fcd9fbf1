// Package rbac is the one list of what the operator asks of a workload cluster: every API call (group,
// resource or subresource, verb; a namespace where the call is confined to one) with the controller that makes
// it and the call site. deploy/manifests/workload-rbac.yaml grants exactly their union, docs/operator.md
// ("What the kubeconfig's identity needs") tabulates them per controller, and tests hold both to this list and
// prove it against a real kube-apiserver: a new call site is one line of Permissions.
package rbac

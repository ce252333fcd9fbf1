// Package node holds the tests that need real nodes: kubelets with containerd, runc and Debian's CNI plugins
// (hack/node.sh, testenv.Node). Vitals' images are built here from the static binaries, FROM scratch
// (internal/tools/ociimage), and imported into the nodes' containerd: nothing is pulled.
//
// The tests of this package share the node cluster and run one after another (none calls t.Parallel): some
// stop a kubelet or change a node's CNI configuration. Tests of other packages must not use the node cluster,
// since packages run in parallel.
package node

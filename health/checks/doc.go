// Package checks holds ready-made health check bodies: one check per file.
//
// # One constructor shape
//
// Every ready-made check, here and in the packages under it (kubernetes, openstack, netlink,
// cniconfig, progress), is built the same way:
//
//	func Name(opts NameOptions) (checks.Func, error)
//
// One options struct per check holds everything it needs, its clients and dependencies included
// (a Kubernetes client, an OpenStack cloud, a clock); the zero value of an option is its default.
// Checks of one package that need nothing more than its common Options take them as they are
// (openstack.Keystone, openstack.Neutron). The
// constructor validates the options and returns an error naming the option it refuses; it never does
// I/O (a check that needs a connection gets it in its options, or makes it in its first run). It
// returns the check's body, a Func: func(context.Context) error, assignable to health.Func. Where a
// package holds one check, its constructor is Check and its options are Options (netlink.Check,
// cniconfig.Check).
//
//	run, err := checks.Capability(checks.CapabilityOptions{Names: []string{"NET_ADMIN"}})
//	if err != nil {
//		return err
//	}
//	m.Register(health.Check{Name: "cap-net-admin", Run: run})
//
// The package depends on the standard library and golang.org/x/sys only, so that the tiny
// container healthcheck binary (cmd/healthcheck) can link it without the health manager or
// Prometheus.
//
// Checks that read /proc or the cgroup filesystem take a Root option (a filesystem root path,
// default "/") so that tests can point them at a fixture tree and show cases the running machine
// cannot (another cgroup version, another kernel's capability set).
package checks

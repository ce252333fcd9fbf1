// Package checks holds ready-made health check bodies: one check per file, each built by a
// constructor that validates its options and returns a Func.
//
// The package depends on the standard library and golang.org/x/sys only, so that the tiny
// container healthcheck binary (cmd/healthcheck) can link it without the health manager or
// Prometheus. A Func has the same underlying type as health.Func, so
//
//	run, err := checks.Capability(checks.CapabilityOptions{Names: []string{"NET_ADMIN"}})
//	m.Register(health.Check{Name: "cap-net-admin", Run: health.Func(run)})
//
// Checks that read /proc or the cgroup filesystem take a Root option (a filesystem root path,
// default "/") so that tests can point them at a fixture tree and show cases the running machine
// cannot (another cgroup version, another kernel's capability set).
package checks

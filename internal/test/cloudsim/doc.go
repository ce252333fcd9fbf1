// Package cloudsim is an in-memory OpenStack API simulator for tests, benchmarks and the demo.
//
// One http.Handler serves a subset of Keystone v3 (password, application-credential and token
// auth, a catalog), Neutron v2.0 (networks, subnets, ports, security groups and rules, routers
// with extraroute and extraroute-atomic, revision numbers with If-Match, quotas and a route
// limit), Nova v2.1 (servers, reboot, delete, reset state, security group actions, tags, metadata), Cinder v3
// (volumes and snapshots with status transitions and cascade delete) and Octavia v2 (load balancers with
// provisioning status and cascade delete), each under its own path prefix of the same address:
//
//	/v3                      Keystone (the auth URL is <base>/v3)
//	/networking/v2.0/...     Neutron
//	/compute/v2.1/...        Nova
//	/volume/v3/{project}/... Cinder
//	/load-balancer/v2.0/...  Octavia (also /v2/)
//	/_sim/...                the simulator's own admin API (knobs, faults, seed, save, a server's crash)
//
// Responses, paging links (<resource>_links with rel=next) and errors follow the shapes of the
// real services closely enough for gophercloud's pagers and error types. Time comes from an
// injected clock and identifiers from an injected random source, so a fixed seed and a fake
// clock give the same IDs and the same state transitions every run. Behaviour knobs (latencies,
// volumes stuck in deleting, the route limit, the token TTL) and scripted faults change while
// the simulator runs, from Go or over HTTP.
//
// Each service is a part of its own (one file or a few per service, named after it): identity (Keystone, with
// its own lock), and neutron, nova, cinder and octavia, whose handlers share the store of cloud resources
// (cloud, one lock: their changes cross services and must be atomic). Every resource shares generic show and
// list handlers (crud.go); Neutron's share create, update and delete (body, ownership, quota, If-Match,
// revision); those Nova, Cinder and Octavia delete asynchronously share removeLater and settle: the service's
// check and in-between state, its delete latency (a knob per service) on the injected clock, then 404. Error
// bodies come from package errbody, the table the fault proxy injects from too.
//
// The simulator is a test double: it is not a security boundary and keeps everything in memory,
// optionally persisted to a JSON file.
package cloudsim

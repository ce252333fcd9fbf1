// Package netlink holds a check that the kernel's routing netlink interface works: it opens a
// NETLINK_ROUTE socket (optionally inside another network namespace), lists the links and the routes,
// and fails if any step errors or outlasts its timeout. It is the equivalent of Kuryr's "IPDB in working
// order" liveness check, for any CNI.
//
// Listing links and routes needs no capability; entering another network namespace needs CAP_SYS_ADMIN.
package netlink
